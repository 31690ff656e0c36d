//! Message sets, the record format before batches: magic 0 (no
//! timestamp) and magic 1 (with one), each message guarded by a CRC-32
//! (IEEE, as `crc32fast` computes it) over everything after the CRC.
//!
//! A message is `offset i64, size i32, crc u32, magic i8, attributes i8,
//! [timestamp i64 (magic 1)], key bytes, value bytes`. A compressed set is
//! one wrapper message whose value is the compressed inner set.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use storage::{Content, KafkaRecord, Record};

use crate::records::{decompress, BatchError, TimestampType};

/// Offset and size before each message.
const LOG_OVERHEAD: usize = 12;
/// The smallest message after its size: crc, magic, attributes, two null lengths.
const MIN_MESSAGE: usize = 4 + 1 + 1 + 4 + 4;
const ATTR_COMPRESSION: i8 = 0x07;
const CODEC_LZ4: i8 = 3;
/// Magic 1: the wrapper's timestamp is the broker's append time.
const ATTR_LOG_APPEND_TIME: i8 = 0x08;
/// The timestamp Kafka gives a magic-0 message, which has none.
pub(crate) const NO_TIMESTAMP: i64 = -1;

/// Whether `data` starts with a message set rather than a record batch:
/// the magic byte sits at the same place in both (byte 16).
pub(crate) fn is_message_set(data: &[u8]) -> bool {
    data.get(16).is_some_and(|&magic| magic < 2)
}

/// One message read from a set, before it becomes a stored record.
#[derive(Debug, PartialEq, Eq)]
struct Message {
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

/// Decodes a produced message set (v0 or v1, compressed wrappers
/// unpacked) into records ready to store, in order, each with a fresh
/// message id. Every CRC is checked; `budget` bounds each wrapper's
/// decompressed size. Magic-0 messages get timestamp -1, as in Kafka.
pub(crate) fn decode(data: Bytes, budget: usize) -> Result<Vec<Record>, BatchError> {
    let mut messages = Vec::new();
    read_set(data, budget, None, &mut messages)?;
    Ok(storage::new_message_ids(messages.len())
        .zip(messages)
        .map(|(message_id, m)| Record {
            message_id,
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Kafka(KafkaRecord {
                key: m.key,
                value: m.value,
                headers: Vec::new(),
                timestamp_ms: m.timestamp,
                txn: None,
            }),
        })
        .collect())
}

fn corrupt(what: &str) -> BatchError {
    BatchError::Corrupt(what.to_owned())
}

/// Reads every message of `data` into `out`. `wrapper` is the enclosing
/// compressed message's (magic, attributes, timestamp) when `data` is its
/// inner set; inner sets may not be compressed again.
fn read_set(
    mut data: Bytes,
    budget: usize,
    wrapper: Option<(i8, i8, i64)>,
    out: &mut Vec<Message>,
) -> Result<(), BatchError> {
    while data.has_remaining() {
        if data.remaining() < LOG_OVERHEAD {
            return Err(corrupt("truncated message header"));
        }
        let _offset = data.get_i64();
        let size = usize::try_from(data.get_i32())
            .ok()
            .filter(|&n| n >= MIN_MESSAGE && n <= data.remaining())
            .ok_or_else(|| corrupt("message size does not match the data"))?;
        let mut m = data.split_to(size);
        let crc = m.get_u32();
        if crc32fast::hash(&m) != crc {
            return Err(corrupt("CRC mismatch"));
        }
        let magic = m.get_i8();
        let attributes = m.get_i8();
        let timestamp = match magic {
            0 => NO_TIMESTAMP,
            1 if m.remaining() >= 8 + 8 => m.get_i64(),
            1 => return Err(corrupt("truncated message")),
            other => return Err(BatchError::UnsupportedMagic(other)),
        };
        let key = nullable_bytes(&mut m)?;
        let value = nullable_bytes(&mut m)?;
        if m.has_remaining() {
            return Err(corrupt("bytes after a message's value"));
        }
        let codec = attributes & ATTR_COMPRESSION;
        if codec != 0 {
            if wrapper.is_some() {
                return Err(corrupt("a compressed message inside a compressed message"));
            }
            let mut inner = value.ok_or_else(|| corrupt("a compressed message without a value"))?;
            if magic == 0 && codec == CODEC_LZ4 {
                inner = lz4_header_checksum_fixed(inner);
            }
            let inner = decompress(i16::from(codec), inner, budget)?;
            read_set(inner, budget, Some((magic, attributes, timestamp)), out)?;
            continue;
        }
        let timestamp = match wrapper {
            Some((outer, _, _)) if outer != magic => {
                return Err(corrupt(
                    "inner messages of another magic than their wrapper",
                ))
            }
            // Kafka: with LogAppendTime the wrapper's timestamp is every
            // inner message's.
            Some((1, attrs, t)) if attrs & ATTR_LOG_APPEND_TIME != 0 => t,
            _ => timestamp,
        };
        out.push(Message {
            timestamp,
            key,
            value,
        });
    }
    Ok(())
}

/// Kafka's clients before 0.10 computed the LZ4 frame's header checksum
/// over the frame's magic number too; Kafka ignores it for magic 0. Here
/// it is recomputed over the descriptor, as the LZ4 frame format defines
/// it, so the decoder accepts the frame either way.
fn lz4_header_checksum_fixed(frame: Bytes) -> Bytes {
    const MAGIC_LEN: usize = 4;
    const CONTENT_SIZE_FLAG: u8 = 0x08;
    let Some(&flags) = frame.get(MAGIC_LEN) else {
        return frame;
    };
    // FLG, BD and the optional 8-byte content size, then the checksum byte.
    let descriptor = 2 + if flags & CONTENT_SIZE_FLAG != 0 { 8 } else { 0 };
    let at = MAGIC_LEN + descriptor;
    if frame.len() <= at {
        return frame;
    }
    let checksum = (xxhash_rust::xxh32::xxh32(&frame[MAGIC_LEN..at], 0) >> 8) as u8;
    let mut fixed = BytesMut::from(&frame[..]);
    fixed[at] = checksum;
    fixed.freeze()
}

fn nullable_bytes(m: &mut Bytes) -> Result<Option<Bytes>, BatchError> {
    if m.remaining() < 4 {
        return Err(corrupt("truncated message"));
    }
    let Ok(len) = usize::try_from(m.get_i32()) else {
        return Ok(None);
    };
    if m.remaining() < len {
        return Err(corrupt("a key or value longer than its message"));
    }
    Ok(Some(m.split_to(len)))
}

/// Appends one uncompressed message at `offset` to `out`: magic 0 (the
/// timestamp is dropped) or magic 1 (CreateTime). The tests' message maker.
#[cfg(test)]
pub(crate) fn put_message(
    out: &mut BytesMut,
    magic: i8,
    offset: i64,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    put_message_as(
        out,
        magic,
        TimestampType::Create,
        offset,
        timestamp,
        key,
        value,
    );
}

/// [`put_message`] with the timestamp type a magic-1 message states
/// (magic 0 has no timestamp, so no type).
pub(crate) fn put_message_as(
    out: &mut BytesMut,
    magic: i8,
    times: TimestampType,
    offset: i64,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    out.put_i64(offset);
    let size_at = out.len();
    out.put_i32(0); // size, filled below
    out.put_u32(0); // CRC, filled below
    let crc_from = out.len();
    out.put_i8(magic);
    // Attributes: uncompressed, and the timestamp's type.
    out.put_i8(match times {
        TimestampType::LogAppend if magic >= 1 => ATTR_LOG_APPEND_TIME,
        _ => 0,
    });
    if magic >= 1 {
        out.put_i64(timestamp);
    }
    for field in [key, value] {
        match field {
            None => out.put_i32(-1),
            Some(b) => {
                out.put_i32(b.len() as i32);
                out.put_slice(b);
            }
        }
    }
    let crc = crc32fast::hash(&out[crc_from..]);
    out[crc_from - 4..crc_from].copy_from_slice(&crc.to_be_bytes());
    let size = (out.len() - size_at - 4) as i32;
    out[size_at..size_at + 4].copy_from_slice(&size.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kafka(r: &Record) -> &KafkaRecord {
        match &r.content {
            Content::Kafka(k) => k,
            Content::Json(_) => panic!("a Kafka record"),
        }
    }

    #[test]
    fn messages_written_read_back_with_their_fields() {
        for magic in [0, 1] {
            let mut set = BytesMut::new();
            put_message(
                &mut set,
                magic,
                0,
                1_700_000_000_123,
                Some(b"k"),
                Some(b"v"),
            );
            put_message(&mut set, magic, 1, 1_700_000_000_456, None, None);
            let records = decode(set.freeze(), 1 << 20).expect("decoded");
            assert_eq!(records.len(), 2);
            let (a, b) = (kafka(&records[0]), kafka(&records[1]));
            assert_eq!(
                (a.key.as_deref(), a.value.as_deref()),
                (Some(&b"k"[..]), Some(&b"v"[..]))
            );
            assert_eq!((b.key.as_deref(), b.value.as_deref()), (None, None));
            let expected = if magic == 0 {
                NO_TIMESTAMP
            } else {
                1_700_000_000_123
            };
            assert_eq!(a.timestamp_ms, expected);
        }
    }

    #[test]
    fn a_flipped_bit_fails_the_crc() {
        let mut set = BytesMut::new();
        put_message(&mut set, 1, 0, 5, Some(b"key"), Some(b"value"));
        let last = set.len() - 1;
        set[last] ^= 1;
        assert_eq!(
            decode(set.freeze(), 1 << 20).map(|r| r.len()),
            Err(corrupt("CRC mismatch"))
        );
    }

    #[test]
    fn a_gzip_wrapper_yields_its_inner_messages_in_order() {
        use std::io::Write;
        let mut inner = BytesMut::new();
        for i in 0..3 {
            put_message(
                &mut inner,
                1,
                i,
                100 + i,
                None,
                Some(format!("m{i}").as_bytes()),
            );
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&inner).expect("compressed");
        let compressed = gz.finish().expect("compressed");
        let records = decode(wrapper(1, 1, &compressed).freeze(), 1 << 20).expect("decoded");
        let values: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    kafka(r).value.clone().unwrap_or_default(),
                    kafka(r).timestamp_ms,
                )
            })
            .collect();
        assert_eq!(
            values,
            vec![
                (Bytes::from_static(b"m0"), 100),
                (Bytes::from_static(b"m1"), 101),
                (Bytes::from_static(b"m2"), 102)
            ]
        );
    }

    /// A wrapper of `inner` compressed with `codec` (attributes), CRC fixed.
    fn wrapper(magic: i8, codec: u8, compressed: &[u8]) -> BytesMut {
        let mut wrapper = BytesMut::new();
        put_message(&mut wrapper, magic, 0, 0, None, Some(compressed));
        wrapper[17] = codec;
        let crc = crc32fast::hash(&wrapper[16..]);
        wrapper[12..16].copy_from_slice(&crc.to_be_bytes());
        wrapper
    }

    #[test]
    fn a_magic_0_lz4_frame_with_the_old_clients_header_checksum_is_read() {
        use std::io::Write;
        let mut inner = BytesMut::new();
        put_message(&mut inner, 0, 0, 0, Some(b"k"), Some(b"old lz4"));
        let mut encoder = lz4::EncoderBuilder::new()
            .build(Vec::new())
            .expect("encoder");
        encoder.write_all(&inner).expect("compressed");
        let (mut frame, done) = encoder.finish();
        done.expect("compressed");
        // The pre-0.10 Java client's checksum: over the magic number too.
        let flags = frame[4];
        let at = 4 + 2 + if flags & 0x08 != 0 { 8 } else { 0 };
        frame[at] = (xxhash_rust::xxh32::xxh32(&frame[..at], 0) >> 8) as u8;
        let records = decode(wrapper(0, 3, &frame).freeze(), 1 << 20).expect("decoded");
        assert_eq!(records.len(), 1);
        assert_eq!(kafka(&records[0]).value.as_deref(), Some(&b"old lz4"[..]));
        // Magic 1 keeps the check: the same broken frame is corrupt there.
        let mut inner1 = BytesMut::new();
        put_message(&mut inner1, 1, 0, 0, Some(b"k"), Some(b"old lz4"));
        let mut encoder = lz4::EncoderBuilder::new()
            .build(Vec::new())
            .expect("encoder");
        encoder.write_all(&inner1).expect("compressed");
        let (mut frame, done) = encoder.finish();
        done.expect("compressed");
        frame[at] = (xxhash_rust::xxh32::xxh32(&frame[..at], 0) >> 8) as u8;
        assert!(decode(wrapper(1, 3, &frame).freeze(), 1 << 20).is_err());
    }

    #[test]
    fn truncated_and_lying_sets_are_refused_without_panicking() {
        let mut set = BytesMut::new();
        put_message(&mut set, 1, 0, 5, Some(b"key"), Some(b"value"));
        for cut in 0..set.len() {
            let mut bytes = set.clone();
            bytes.truncate(cut);
            if cut > 0 {
                assert!(decode(bytes.freeze(), 1 << 20).is_err(), "cut at {cut}");
            }
        }
    }
}
