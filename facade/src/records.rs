//! Record batches (magic 2) in and out.
//!
//! Produce: [`decode_batches`] checks each batch (length, magic, CRC-32C),
//! decompresses it within a budget and turns every record into a stored
//! [`Record`] with a minted id (a message set of magic 0 or 1, from an old
//! client, is read by `legacy::message_set`). Fetch: [`BatchWriter`]
//! writes stored records into uncompressed batches one at a time, straight
//! from storage; [`encode_batch`] writes decoded messages through it.
//!
//! The record level is written here rather than taken from
//! `kafka_protocol::records`, because that codec keeps headers in a map
//! (a record's repeated header names would be lost) and decompresses without
//! a bound (a small compressed batch could exhaust memory).

use std::io::Read;

use bytes::{Buf, Bytes, BytesMut};
use storage::producers::ProducerBatch;
use storage::record::TxnMark;
use storage::{Content, Header, KafkaRecord, Record, StoredMessage};

use crate::varint;

mod writer;

pub(crate) use writer::{BatchWriter, Outgoing, Written};

/// Why a produced batch was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Lengths, CRC or record structure do not add up.
    #[error("corrupt record batch: {0}")]
    Corrupt(String),
    /// Neither a magic-2 batch nor a magic-0/1 message set.
    #[error("record batch magic {0} is not supported (only 0, 1 and 2)")]
    UnsupportedMagic(i8),
    /// Decompressed, the batch would exceed the budget.
    #[error("record batch is larger than {0} bytes once decompressed")]
    TooLarge(usize),
    /// A batch this broker does not accept (control batches).
    #[error("invalid record batch: {0}")]
    Invalid(String),
}

const HEADER_LEN: usize = 61;
const CRC_START: usize = 21;
const ATTR_COMPRESSION: i16 = 0x07;
const ATTR_LOG_APPEND_TIME: i16 = 0x08;
const ATTR_TRANSACTIONAL: i16 = 0x10;
const ATTR_CONTROL: i16 = 0x20;

fn corrupt(what: &str) -> BatchError {
    BatchError::Corrupt(what.to_owned())
}

/// The records of a produce's partition, ready to store, and the idempotent
/// producer that sent them, if any.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The records, each with a fresh message id.
    pub records: Vec<Record>,
    /// The producer id, epoch and first sequence of an idempotent batch.
    pub producer: Option<ProducerBatch>,
}

/// Decodes every batch in `data` into records ready to store, each with a
/// fresh message id. `budget` bounds the decompressed size of each batch.
pub fn decode_batches(data: Bytes, budget: usize) -> Result<Vec<Record>, BatchError> {
    decode(data, budget).map(|d| d.records)
}

/// Like [`decode_batches`], keeping the idempotent producer's identity. An
/// idempotent producer sends one batch per partition and request, as Kafka
/// requires; more are refused.
pub fn decode(mut data: Bytes, budget: usize) -> Result<Decoded, BatchError> {
    // Old clients (Produce v0–v2) send message sets of magic 0 or 1.
    if crate::legacy::message_set::is_message_set(&data) {
        return crate::legacy::message_set::decode(data, budget).map(|records| Decoded {
            records,
            producer: None,
        });
    }
    let mut out = Decoded::default();
    let mut batches = 0;
    while data.has_remaining() {
        if data.remaining() < HEADER_LEN {
            return Err(corrupt("truncated batch header"));
        }
        let batch_len = i32::from_be_bytes([data[8], data[9], data[10], data[11]]);
        let total = usize::try_from(batch_len)
            .ok()
            .and_then(|n| n.checked_add(12))
            .filter(|&n| n >= HEADER_LEN && n <= data.remaining())
            .ok_or_else(|| corrupt("batch length does not match the data"))?;
        let batch = data.split_to(total);
        let producer = decode_batch(batch, budget, &mut out.records)?;
        batches += 1;
        if let Some(p) = producer {
            if batches > 1 || out.producer.is_some() {
                return Err(BatchError::Invalid(
                    "an idempotent producer sends one batch per partition".into(),
                ));
            }
            out.producer = Some(p);
        } else if out.producer.is_some() {
            return Err(BatchError::Invalid(
                "an idempotent producer sends one batch per partition".into(),
            ));
        }
    }
    Ok(out)
}

/// Decodes one batch into `out`; returns its producer identity when it has one.
fn decode_batch(
    batch: Bytes,
    budget: usize,
    out: &mut Vec<Record>,
) -> Result<Option<ProducerBatch>, BatchError> {
    let magic = batch[16] as i8;
    if magic != 2 {
        return Err(BatchError::UnsupportedMagic(magic));
    }
    let crc = u32::from_be_bytes([batch[17], batch[18], batch[19], batch[20]]);
    if crc32c::crc32c(&batch[CRC_START..]) != crc {
        return Err(corrupt("CRC mismatch"));
    }
    let mut h = batch.slice(CRC_START..HEADER_LEN);
    let attributes = h.get_i16();
    let _last_offset_delta = h.get_i32();
    let base_timestamp = h.get_i64();
    let _max_timestamp = h.get_i64();
    let producer_id = h.get_i64();
    let producer_epoch = h.get_i16();
    let base_sequence = h.get_i32();
    let count = h.get_i32();
    if attributes & ATTR_CONTROL != 0 {
        return Err(BatchError::Invalid(
            "control batches cannot be produced".into(),
        ));
    }
    let count = usize::try_from(count).map_err(|_| corrupt("negative record count"))?;
    let body = decompress(
        attributes & ATTR_COMPRESSION,
        batch.slice(HEADER_LEN..),
        budget,
    )?;
    let mut body = body;
    out.reserve(count.min(body.len()));
    let before = out.len();
    // A record is at least 7 bytes, so a lying count mints no more ids than that.
    for message_id in storage::new_message_ids(count.min(body.len() / 7 + 1)) {
        out.push(decode_record(&mut body, base_timestamp, message_id)?);
    }
    if out.len() - before != count {
        return Err(corrupt("fewer records than the batch's count"));
    }
    if body.has_remaining() {
        return Err(corrupt("bytes after the last record"));
    }
    if attributes & ATTR_TRANSACTIONAL != 0 {
        if producer_id < 0 {
            return Err(BatchError::Invalid(
                "a transactional batch needs a producer id".into(),
            ));
        }
        let mark = TxnMark {
            producer_id,
            epoch: producer_epoch,
            marker: None,
        };
        for record in &mut out[before..] {
            if let Content::Kafka(k) = &mut record.content {
                k.txn = Some(mark);
            }
        }
    }
    Ok((producer_id >= 0).then_some(ProducerBatch {
        transactional: attributes & ATTR_TRANSACTIONAL != 0,
        producer_id,
        epoch: producer_epoch,
        base_sequence,
    }))
}

fn decode_record(
    buf: &mut Bytes,
    base_timestamp: i64,
    message_id: uuid::Uuid,
) -> Result<Record, BatchError> {
    let len = usize::try_from(varlong(buf)?).map_err(|_| corrupt("negative record length"))?;
    if buf.remaining() < len {
        return Err(corrupt("record longer than its batch"));
    }
    let mut r = buf.split_to(len);
    if !r.has_remaining() {
        return Err(corrupt("empty record"));
    }
    let _attributes = r.get_i8();
    let timestamp_delta = varlong(&mut r)?;
    let _offset_delta = varlong(&mut r)?;
    let key = nullable_bytes(&mut r)?;
    let value = nullable_bytes(&mut r)?;
    let header_count =
        usize::try_from(varlong(&mut r)?).map_err(|_| corrupt("negative header count"))?;
    let mut headers = Vec::with_capacity(header_count.min(r.len()));
    for _ in 0..header_count {
        let key = nullable_bytes(&mut r)?.ok_or_else(|| corrupt("null header name"))?;
        let value = nullable_bytes(&mut r)?;
        headers.push(Header { key, value });
    }
    if r.has_remaining() {
        return Err(corrupt("bytes after the record's headers"));
    }
    Ok(Record {
        message_id,
        transaction_id: None,
        trace_id: None,
        producer_sub: None,
        content: Content::Kafka(KafkaRecord {
            key,
            value,
            headers,
            timestamp_ms: base_timestamp.wrapping_add(timestamp_delta),
            txn: None,
        }),
    })
}

/// A zigzag varint of up to 64 bits.
pub(crate) fn varlong(buf: &mut Bytes) -> Result<i64, BatchError> {
    let (v, len) = varint::zigzag(buf).map_err(|e| corrupt(&e.to_string()))?;
    buf.advance(len);
    Ok(v)
}

pub(crate) fn nullable_bytes(buf: &mut Bytes) -> Result<Option<Bytes>, BatchError> {
    let len = varlong(buf)?;
    if len < 0 {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| corrupt("length"))?;
    if buf.remaining() < len {
        return Err(corrupt("field longer than its record"));
    }
    Ok(Some(buf.split_to(len)))
}

/// Decompresses a batch body, refusing to produce more than `budget` bytes.
pub(crate) fn decompress(codec: i16, data: Bytes, budget: usize) -> Result<Bytes, BatchError> {
    let bounded = |reader: &mut dyn Read| -> Result<Bytes, BatchError> {
        let mut out = Vec::new();
        reader
            .take(budget as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| BatchError::Corrupt(format!("decompression failed: {e}")))?;
        if out.len() > budget {
            return Err(BatchError::TooLarge(budget));
        }
        Ok(Bytes::from(out))
    };
    match codec {
        0 => Ok(data),
        1 => bounded(&mut flate2::read::GzDecoder::new(data.reader())),
        2 => snappy(&data, budget),
        3 => {
            let mut decoder = lz4::Decoder::new(data.reader())
                .map_err(|e| BatchError::Corrupt(format!("lz4: {e}")))?;
            bounded(&mut decoder)
        }
        4 => {
            let mut decoder = zstd::stream::read::Decoder::new(data.reader())
                .map_err(|e| BatchError::Corrupt(format!("zstd: {e}")))?;
            bounded(&mut decoder)
        }
        other => Err(BatchError::Corrupt(format!(
            "unknown compression codec {other}"
        ))),
    }
}

/// Snappy as Kafka clients write it: the Java client's xerial framing
/// (a magic header, then length-prefixed blocks), or one raw block.
fn snappy(data: &[u8], budget: usize) -> Result<Bytes, BatchError> {
    const XERIAL: &[u8] = b"\x82SNAPPY\x00";
    let mut blocks: Vec<&[u8]> = Vec::new();
    if data.starts_with(XERIAL) && data.len() >= 16 {
        let mut rest = &data[16..];
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(corrupt("truncated snappy block"));
            }
            let n = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let block = rest
                .get(4..4 + n)
                .ok_or_else(|| corrupt("truncated snappy block"))?;
            blocks.push(block);
            rest = &rest[4 + n..];
        }
    } else {
        blocks.push(data);
    }
    let mut out = Vec::new();
    for block in blocks {
        let n = snap::raw::decompress_len(block)
            .map_err(|e| BatchError::Corrupt(format!("snappy: {e}")))?;
        if out.len() + n > budget {
            return Err(BatchError::TooLarge(budget));
        }
        let start = out.len();
        out.resize(start + n, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut out[start..])
            .map_err(|e| BatchError::Corrupt(format!("snappy: {e}")))?;
    }
    Ok(Bytes::from(out))
}

/// The header that carries a native message's transaction id.
pub const TRANSACTION_ID_HEADER: &str = "queen-transaction-id";
/// The header that carries a native message's trace id.
pub const TRACE_ID_HEADER: &str = "queen-trace-id";

/// Whose time a topic's records carry (`message.timestamp.type`), which a
/// fetched batch states in its attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    /// The producer's (`CreateTime`).
    Create,
    /// The broker's when it appended them (`LogAppendTime`): clients take
    /// a batch's max timestamp as each of its records' time.
    LogAppend,
}

impl TimestampType {
    /// The type a batch's (or a magic-1 message's) attributes state.
    pub(crate) fn from_attributes(attributes: i16) -> Self {
        match attributes & ATTR_LOG_APPEND_TIME {
            0 => Self::Create,
            _ => Self::LogAppend,
        }
    }

    /// Its bit in a batch's attributes (the same bit in a magic-1 message's).
    pub(crate) fn attribute(self) -> i16 {
        match self {
            Self::Create => 0,
            Self::LogAppend => ATTR_LOG_APPEND_TIME,
        }
    }
}

/// Writes decoded `messages` (ascending offsets) as uncompressed magic-2
/// batches (see [`BatchWriter`]), whatever their size.
pub fn encode_batch(messages: &[StoredMessage], times: TimestampType, out: &mut BytesMut) {
    let mut writer = BatchWriter::new(out, times, usize::MAX, true);
    for m in messages {
        writer.push(&Outgoing::decoded(m));
    }
    writer.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{
        Compression, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
        TimestampType as RefTimestampType,
    };

    /// A stored Kafka record of value "v" at `offset` and `timestamp_ms`.
    fn stored_v(offset: i64, timestamp_ms: i64, txn: Option<TxnMark>) -> StoredMessage {
        StoredMessage {
            offset,
            created_at_ms: 5,
            record: Record {
                message_id: storage::new_message_id(),
                transaction_id: None,
                trace_id: None,
                producer_sub: None,
                content: Content::Kafka(KafkaRecord {
                    key: None,
                    value: Some(Bytes::from_static(b"v")),
                    headers: Vec::new(),
                    timestamp_ms,
                    txn,
                }),
            },
        }
    }

    fn kafka_record(
        offset: i64,
        key: Option<&str>,
        value: Option<&str>,
    ) -> kafka_protocol::records::Record {
        kafka_protocol::records::Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: RefTimestampType::Creation,
            offset,
            // The reference encoder starts a new batch when offset - sequence changes.
            sequence: offset as i32,
            timestamp: 1_700_000_000_000 + offset,
            key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: value.map(|v| Bytes::copy_from_slice(v.as_bytes())),
            headers: [("h".into(), Some(Bytes::from_static(b"v")))]
                .into_iter()
                .collect(),
        }
    }

    fn produced(compression: Compression) -> Bytes {
        let records = [
            kafka_record(0, Some("k"), Some("hello")),
            kafka_record(1, None, None),
        ];
        let mut buf = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut buf, &records, &options).expect("encode");
        buf.freeze()
    }

    #[test]
    fn every_codec_decodes() {
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let records =
                decode_batches(produced(c), 1 << 20).unwrap_or_else(|e| panic!("{c:?}: {e}"));
            assert_eq!(records.len(), 2, "{c:?}");
            let Content::Kafka(k) = &records[0].content else {
                panic!("kafka record")
            };
            assert_eq!(k.key.as_deref(), Some(&b"k"[..]));
            assert_eq!(k.value.as_deref(), Some(&b"hello"[..]));
            assert_eq!(k.timestamp_ms, 1_700_000_000_000);
            assert_eq!(
                k.headers,
                vec![Header {
                    key: Bytes::from_static(b"h"),
                    value: Some(Bytes::from_static(b"v"))
                }]
            );
            let Content::Kafka(k) = &records[1].content else {
                panic!("kafka record")
            };
            assert_eq!((k.key.as_ref(), k.value.as_ref()), (None, None));
            assert_eq!(k.timestamp_ms, 1_700_000_000_001);
        }
    }

    #[test]
    fn damage_is_refused_not_panicked_on() {
        let good = produced(Compression::Gzip);
        let mut flipped = BytesMut::from(&good[..]);
        let last = flipped.len() - 1;
        flipped[last] ^= 0xff;
        assert_eq!(
            decode_batches(flipped.freeze(), 1 << 20),
            Err(corrupt("CRC mismatch"))
        );
        for cut in 0..good.len() {
            let r = decode_batches(good.slice(..cut), 1 << 20);
            assert!(r.is_err() || cut == 0, "cut {cut} of {}: {r:?}", good.len());
        }
        assert_eq!(
            decode_batches(produced(Compression::Zstd), 8),
            Err(BatchError::TooLarge(8))
        );
    }

    /// A batch is based at its first record's timestamp, as Kafka's log
    /// holds them: a later, earlier record gets a negative delta, and the
    /// batch states the largest.
    #[test]
    fn a_batch_is_based_at_its_first_record() {
        let messages: Vec<StoredMessage> = [200, 100, 300, 250]
            .into_iter()
            .enumerate()
            .map(|(i, ts)| stored_v(10 + i as i64, ts, None))
            .collect();
        let mut out = BytesMut::new();
        encode_batch(&messages, TimestampType::Create, &mut out);
        assert_eq!(out[27..35], 200i64.to_be_bytes(), "base timestamp");
        assert_eq!(out[35..43], 300i64.to_be_bytes(), "max timestamp");
        let set = RecordBatchDecoder::decode(&mut out.freeze()).expect("reference decoder");
        let times: Vec<i64> = set.records.iter().map(|r| r.timestamp).collect();
        assert_eq!(times, [200, 100, 300, 250]);
    }

    /// A writer stays within its limit, record by record, except for a
    /// first record that must go whatever its size; what it reports is
    /// what it wrote.
    #[test]
    fn the_writer_keeps_its_limit_and_says_what_it_wrote() {
        let value = Bytes::from(vec![7u8; 50]);
        let messages: Vec<StoredMessage> = (0..20)
            .map(|i| {
                let mut m = stored_v(100 + i, 1_000 + i, None);
                if let Content::Kafka(k) = &mut m.record.content {
                    k.value = Some(value.clone());
                }
                m
            })
            .collect();
        for at_least_one in [false, true] {
            let mut before = 0;
            for limit in (0..1_600).step_by(7) {
                let mut out = BytesMut::new();
                let mut writer =
                    BatchWriter::new(&mut out, TimestampType::Create, limit, at_least_one);
                let pushed = messages
                    .iter()
                    .take_while(|m| writer.push(&Outgoing::decoded(m)))
                    .count();
                let written = writer.finish();
                assert_eq!(written.records, pushed);
                assert!(written.records >= before, "more room never writes less");
                before = written.records;
                if out.len() > limit {
                    assert!(at_least_one && written.records == 1, "limit {limit}");
                }
                if written.records == 0 {
                    assert!(out.is_empty());
                    assert!(!at_least_one);
                    continue;
                }
                let set = RecordBatchDecoder::decode(&mut out.freeze()).expect("reference decoder");
                let offsets: Vec<i64> = set.records.iter().map(|r| r.offset).collect();
                let expected: Vec<i64> = (100..100 + pushed as i64).collect();
                assert_eq!(offsets, expected, "limit {limit}");
                assert_eq!(written.last_offset, expected.last().copied());
            }
            assert_eq!(before, messages.len(), "a large enough limit takes all");
        }
    }

    #[test]
    fn encoded_batches_read_back_with_the_reference_decoder() {
        let messages: Vec<StoredMessage> = decode_batches(produced(Compression::None), 1 << 20)
            .expect("decode")
            .into_iter()
            .enumerate()
            .map(|(i, record)| StoredMessage {
                offset: 40 + i as i64,
                created_at_ms: 5,
                record,
            })
            .chain(std::iter::once(StoredMessage {
                offset: 42,
                created_at_ms: 1_700_000_000_009,
                record: Record {
                    message_id: storage::new_message_id(),
                    transaction_id: Some("order-1".into()),
                    trace_id: None,
                    producer_sub: None,
                    content: Content::Json(r#"{"a":1}"#.into()),
                },
            }))
            .collect();
        let mut out = BytesMut::new();
        encode_batch(&messages, TimestampType::Create, &mut out);
        let mut bytes = out.freeze();
        let set = RecordBatchDecoder::decode(&mut bytes).expect("reference decoder accepts it");
        let offsets: Vec<i64> = set.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, [40, 41, 42]);
        assert_eq!(set.records[0].value.as_deref(), Some(&b"hello"[..]));
        assert_eq!(set.records[2].value.as_deref(), Some(&br#"{"a":1}"#[..]));
        assert_eq!(set.records[2].timestamp, 1_700_000_000_009);
        assert_eq!(
            set.records[2]
                .headers
                .get(&kafka_protocol::protocol::StrBytes::from_static_str(
                    TRANSACTION_ID_HEADER
                )),
            Some(&Some(Bytes::from_static(b"order-1")))
        );

        // A compacted partition's records keep their offsets, gaps and all.
        let mut sparse = messages;
        for (m, offset) in sparse.iter_mut().zip([40, 43, 47]) {
            m.offset = offset;
        }
        let mut out = BytesMut::new();
        encode_batch(&sparse, TimestampType::Create, &mut out);
        let set = RecordBatchDecoder::decode(&mut out.freeze()).expect("reference decoder");
        let offsets: Vec<i64> = set.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, [40, 43, 47]);
    }

    #[test]
    fn transactions_keep_their_producer_and_attributes_both_ways() {
        // Produced: a transactional batch marks its records.
        let records: Vec<_> = (0..2)
            .map(|i| kafka_protocol::records::Record {
                transactional: true,
                producer_id: 5,
                producer_epoch: 2,
                ..kafka_record(i, None, Some("v"))
            })
            .collect();
        let mut buf = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut buf, &records, &options).expect("encode");
        let decoded = decode(buf.freeze(), 1 << 20).expect("decode");
        let mark = TxnMark {
            producer_id: 5,
            epoch: 2,
            marker: None,
        };
        assert!(decoded.producer.is_some_and(|p| p.transactional));
        for r in &decoded.records {
            assert!(matches!(&r.content, Content::Kafka(k) if k.txn == Some(mark)));
        }

        // Fetched: a plain record, the transaction's two, its commit
        // marker, a plain one: four batches, as Kafka's log holds them.
        let stored = |offset: i64, txn: Option<TxnMark>| stored_v(offset, 7, txn);
        let commit = TxnMark {
            marker: Some(storage::record::Marker::Commit),
            ..mark
        };
        let messages = [
            stored(0, None),
            stored(1, Some(mark)),
            stored(2, Some(mark)),
            stored(3, Some(commit)),
            stored(4, None),
        ];
        let mut out = BytesMut::new();
        encode_batch(&messages, TimestampType::Create, &mut out);
        let set = RecordBatchDecoder::decode_all(&mut out.freeze()).expect("reference decoder");
        let seen: Vec<(i64, bool, bool, i64, i16)> = set
            .iter()
            .flat_map(|s| &s.records)
            .map(|r| {
                (
                    r.offset,
                    r.transactional,
                    r.control,
                    r.producer_id,
                    r.producer_epoch,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (0, false, false, -1, -1),
                (1, true, false, 5, 2),
                (2, true, false, 5, 2),
                (3, true, true, 5, 2),
                (4, false, false, -1, -1),
            ]
        );
    }

    #[test]
    fn log_append_time_batches_say_so_and_keep_each_append_time() {
        let at = |offset: i64, time: i64| stored_v(offset, time, None);
        let messages = [at(0, 100), at(1, 100), at(2, 250), at(3, 250)];
        let batches = |times| {
            let mut out = BytesMut::new();
            encode_batch(&messages, times, &mut out);
            RecordBatchDecoder::decode_all(&mut out.freeze()).expect("reference decoder")
        };
        let seen = |sets: Vec<kafka_protocol::records::RecordSet>| -> Vec<Vec<(i64, i64, bool)>> {
            sets.iter()
                .map(|s| {
                    s.records
                        .iter()
                        .map(|r| {
                            let log_append = r.timestamp_type == RefTimestampType::LogAppend;
                            (r.offset, r.timestamp, log_append)
                        })
                        .collect()
                })
                .collect()
        };
        // A client takes a LogAppendTime batch's max timestamp for each of
        // its records, so each append time is a batch of its own.
        assert_eq!(
            seen(batches(TimestampType::LogAppend)),
            [
                vec![(0, 100, true), (1, 100, true)],
                vec![(2, 250, true), (3, 250, true)]
            ]
        );
        assert_eq!(
            seen(batches(TimestampType::Create)),
            [vec![
                (0, 100, false),
                (1, 100, false),
                (2, 250, false),
                (3, 250, false)
            ]]
        );
    }
}
