//! Down-conversion for Fetch v0–v3: the magic-2 batches a fetch reads
//! become a message set of magic 0 (Fetch v0–v1) or magic 1 (v2–v3), one
//! uncompressed message per record with its absolute offset, key, value
//! and (magic 1) timestamp. Headers have no place in a message set and are
//! dropped, and control batches are left out, as Kafka does.

use bytes::{Buf, Bytes, BytesMut};

use super::message_set::put_message_as;
use crate::records::{decompress, nullable_bytes, varlong, BatchError, TimestampType};

const HEADER_LEN: usize = 61;
const ATTR_COMPRESSION: i16 = 0x07;
const ATTR_CONTROL: i16 = 0x20;

/// The message format a Fetch version reads.
pub(crate) fn magic_for(fetch_version: i16) -> i8 {
    if fetch_version >= 2 {
        1
    } else {
        0
    }
}

/// Rewrites the batches of `data` as a message set of `magic`. A trailing
/// partial batch (a fetch cut at its size limit) is left out. As in
/// Kafka's down-conversion, the set stays within the size of `data` (which
/// the fetch's limits bounded; small records grow in the old formats) or
/// of the first batch converted, whichever is larger, so a consumer always
/// progresses: whole messages only.
pub(crate) fn convert(mut data: Bytes, magic: i8) -> Result<Bytes, BatchError> {
    let mut limit = data.len();
    let mut first = true;
    let mut out = BytesMut::with_capacity(limit);
    'batches: while data.remaining() >= HEADER_LEN {
        let base_offset = i64::from_be_bytes(data[..8].try_into().unwrap_or_default());
        let len = i32::from_be_bytes([data[8], data[9], data[10], data[11]]);
        let Some(total) = usize::try_from(len)
            .ok()
            .and_then(|n| n.checked_add(12))
            .filter(|&n| n >= HEADER_LEN && n <= data.remaining())
        else {
            break;
        };
        let batch = data.split_to(total);
        let mut h = batch.slice(21..HEADER_LEN);
        let attributes = h.get_i16();
        let _last_offset_delta = h.get_i32();
        let base_timestamp = h.get_i64();
        if attributes & ATTR_CONTROL != 0 {
            continue;
        }
        // Kafka keeps the batch's timestamp type in the messages it makes.
        let times = TimestampType::from_attributes(attributes);
        let mut body = decompress(
            attributes & ATTR_COMPRESSION,
            batch.slice(HEADER_LEN..),
            usize::MAX / 2,
        )?;
        while body.has_remaining() {
            let len = usize::try_from(varlong(&mut body)?)
                .ok()
                .filter(|&n| n <= body.remaining())
                .ok_or_else(|| BatchError::Corrupt("record longer than its batch".into()))?;
            let mut r = body.split_to(len);
            if !r.has_remaining() {
                return Err(BatchError::Corrupt("empty record".into()));
            }
            let _attributes = r.get_i8();
            let timestamp = base_timestamp.wrapping_add(varlong(&mut r)?);
            let offset = base_offset.wrapping_add(varlong(&mut r)?);
            let key = nullable_bytes(&mut r)?;
            let value = nullable_bytes(&mut r)?;
            let before = out.len();
            put_message_as(
                &mut out,
                magic,
                times,
                offset,
                timestamp,
                key.as_deref(),
                value.as_deref(),
            );
            if !first && out.len() > limit {
                out.truncate(before);
                break 'batches;
            }
        }
        if first {
            limit = limit.max(out.len());
            first = false;
        }
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::message_set::put_message;
    use crate::records::encode_batch;
    use storage::{Content, Header, KafkaRecord, Record, StoredMessage};

    fn stored(offset: i64, timestamp_ms: i64, key: Option<&'static [u8]>) -> StoredMessage {
        StoredMessage {
            offset,
            created_at_ms: 0,
            record: Record {
                message_id: uuid::Uuid::nil(),
                transaction_id: None,
                trace_id: None,
                producer_sub: None,
                content: Content::Kafka(KafkaRecord {
                    key: key.map(Bytes::from_static),
                    value: Some(Bytes::from(format!("value-{offset}"))),
                    headers: vec![Header {
                        key: Bytes::from_static(b"h"),
                        value: None,
                    }],
                    timestamp_ms,
                    txn: None,
                }),
            },
        }
    }

    #[test]
    fn batches_become_messages_with_offsets_keys_values_and_timestamps() {
        let mut batches = BytesMut::new();
        encode_batch(
            &[stored(7, 1000, Some(b"a")), stored(9, 990, None)],
            TimestampType::Create,
            &mut batches,
        );
        encode_batch(
            &[stored(10, 2000, Some(b"b"))],
            TimestampType::LogAppend,
            &mut batches,
        );
        for magic in [0, 1] {
            let set = convert(batches.clone().freeze(), magic).expect("converted");
            let mut expected = BytesMut::new();
            for (offset, ts, key) in [
                (7, 1000, Some(&b"a"[..])),
                (9, 990, None),
                (10, 2000, Some(b"b")),
            ] {
                let value = format!("value-{offset}");
                // The LogAppendTime batch's message says so (magic 1).
                let times = match offset {
                    10 => TimestampType::LogAppend,
                    _ => TimestampType::Create,
                };
                put_message_as(
                    &mut expected,
                    magic,
                    times,
                    offset,
                    ts,
                    key,
                    Some(value.as_bytes()),
                );
            }
            assert_eq!(set, expected.freeze(), "magic {magic}");
        }
    }

    #[test]
    fn the_set_stays_within_the_batches_size_after_the_first_batch() {
        let tiny: Vec<StoredMessage> = (0..50).map(|o| stored(o, 1, None)).collect();
        let mut all = BytesMut::new();
        for o in 0..50 {
            let value = format!("value-{o}");
            put_message(&mut all, 1, o, 1, None, Some(value.as_bytes()));
        }
        // A first batch is converted whole, however much it grows.
        let mut one_batch = BytesMut::new();
        encode_batch(&tiny, TimestampType::Create, &mut one_batch);
        assert!(all.len() > one_batch.len(), "tiny records grow");
        let whole = convert(one_batch.freeze(), 1).expect("converted");
        assert_eq!(whole, all.clone().freeze());
        // After it, only whole messages within the batches' size.
        let mut batches = BytesMut::new();
        encode_batch(&tiny[..1], TimestampType::Create, &mut batches);
        encode_batch(&tiny[1..], TimestampType::Create, &mut batches);
        let set = convert(batches.clone().freeze(), 1).expect("converted");
        assert!(
            set.len() <= batches.len(),
            "{} > {}",
            set.len(),
            batches.len()
        );
        let mut n = 0;
        let mut prefix = BytesMut::new();
        while prefix.len() < set.len() {
            let value = format!("value-{n}");
            put_message(&mut prefix, 1, n, 1, None, Some(value.as_bytes()));
            n += 1;
        }
        assert_eq!(set, prefix.freeze(), "whole messages, in order");
        assert!((10..50).contains(&n), "{n} of 50 fit");
    }

    #[test]
    fn a_partial_trailing_batch_is_left_out() {
        let mut batches = BytesMut::new();
        encode_batch(&[stored(0, 1, None)], TimestampType::Create, &mut batches);
        let whole = batches.len();
        encode_batch(&[stored(1, 1, None)], TimestampType::Create, &mut batches);
        let cut = batches.freeze().slice(..whole + 20);
        let set = convert(cut, 1).expect("converted");
        let mut expected = BytesMut::new();
        put_message(&mut expected, 1, 0, 1, None, Some(b"value-0"));
        assert_eq!(set, expected.freeze());
    }
}
