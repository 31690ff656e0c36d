//! The stored frame of spec 4.4, shared by the flag-8 push, the binary
//! transaction and the framed pop:
//!
//! ```text
//! frame := body_len:u32 flags:u8 message_id:u8[16] [trace_id:u8[16] (flags & 1)]
//!          transactionId:str16 [producer:str16 (flags & 2)] payload:u8[rest]
//! ```
//!
//! Clients build frames with flags 0 only; the broker writes flags 1 and 2
//! in its pop answers. The storage layer's record format is another one
//! (`storage::record`), so a client's frames are read into records, not
//! stored as they came.

use serde_json::value::RawValue;
use storage::{Content, Record};
use uuid::Uuid;

use super::super::render::compact_json;
use super::reader::Reader;
use super::BinaryError;

const TRACE: u8 = 1;
const PRODUCER: u8 = 2;

/// The `n` client-built frames of `bytes`, which must hold exactly them,
/// as records. A frame's transaction id that is empty or its message id's
/// text is the minted one, as a JSON push without `transactionId`.
pub(super) fn decode(bytes: &[u8], n: usize) -> Result<Vec<Record>, BinaryError> {
    let mut all = Reader::new(bytes);
    // Each frame is at least 23 bytes: a count beyond that is a lie.
    let mut records = Vec::with_capacity(n.min(bytes.len() / 23));
    for _ in 0..n {
        let len = all.u32("frame length")?;
        let mut frame = Reader::new(all.take(len, "frame")?);
        let flags = frame.u8("frame flags")?;
        if flags != 0 {
            return Err(BinaryError::Invalid(format!(
                "a pushed frame has flags {flags:#04x}; clients send 0"
            )));
        }
        let id = frame.take(16, "frame message id")?;
        let message_id = Uuid::from_slice(id).map_err(|e| BinaryError::Invalid(e.to_string()))?;
        if message_id.get_version_num() != 7 {
            return Err(BinaryError::Invalid(format!(
                "message id {message_id} is not a version-7 UUID"
            )));
        }
        let txn = frame.str16("frame transaction id")?;
        let transaction_id =
            (!txn.is_empty() && txn != message_id.to_string().as_str()).then(|| txn.to_owned());
        let payload = frame.rest();
        let data = if payload.is_empty() {
            "null".to_owned()
        } else {
            json_payload(payload)?
        };
        records.push(Record {
            message_id,
            transaction_id,
            trace_id: None,
            producer_sub: None,
            content: Content::Json(data),
        });
    }
    all.finish("the last frame")?;
    Ok(records)
}

/// One pushed JSON document, checked and compacted as the JSON push
/// stores it.
pub(super) fn json_payload(bytes: &[u8]) -> Result<String, BinaryError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| BinaryError::Invalid("a payload is not UTF-8".into()))?;
    serde_json::from_str::<&RawValue>(text)
        .map_err(|e| BinaryError::Invalid(format!("a payload is not one JSON document: {e}")))?;
    Ok(compact_json(text))
}

/// Appends `record`'s frame, with `transaction_id` (its effective one) and
/// `json` (its data) to `out`; `None` (and `out` unchanged) when a field
/// does not fit a `str16`.
pub(super) fn encode(
    record: &Record,
    transaction_id: &str,
    json: &str,
    out: &mut Vec<u8>,
) -> Option<()> {
    let txn = u16::try_from(transaction_id.len()).ok()?;
    let sub = match &record.producer_sub {
        Some(s) => Some(u16::try_from(s.len()).ok()?),
        None => None,
    };
    let mut flags = 0;
    let mut len = 1 + 16 + 2 + transaction_id.len() + json.len();
    if record.trace_id.is_some() {
        flags |= TRACE;
        len += 16;
    }
    if let Some(sub) = sub {
        flags |= PRODUCER;
        len += 2 + usize::from(sub);
    }
    out.extend_from_slice(&u32::try_from(len).ok()?.to_le_bytes());
    out.push(flags);
    out.extend_from_slice(record.message_id.as_bytes());
    if let Some(trace) = &record.trace_id {
        out.extend_from_slice(trace.as_bytes());
    }
    out.extend_from_slice(&txn.to_le_bytes());
    out.extend_from_slice(transaction_id.as_bytes());
    if let (Some(sub), Some(text)) = (sub, &record.producer_sub) {
        out.extend_from_slice(&sub.to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    }
    out.extend_from_slice(json.as_bytes());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(id: Uuid, txn: &str, payload: &[u8]) -> Vec<u8> {
        let record = Record {
            message_id: id,
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Json(String::new()),
        };
        let mut out = Vec::new();
        encode(
            &record,
            txn,
            std::str::from_utf8(payload).expect("utf8"),
            &mut out,
        )
        .expect("fits");
        out
    }

    #[test]
    fn client_frames_decode_to_records() {
        let id = Uuid::now_v7();
        let mut bytes = frame(id, "t1", br#"{ "a": 1 }"#);
        bytes.extend(frame(id, &id.to_string(), b""));
        let records = decode(&bytes, 2).expect("valid");
        assert_eq!(records[0].transaction_id.as_deref(), Some("t1"));
        assert_eq!(records[0].content, Content::Json(r#"{"a":1}"#.into()));
        assert_eq!(records[1].transaction_id, None, "the id's text is minted");
        assert_eq!(records[1].content, Content::Json("null".into()));
    }

    #[test]
    fn bad_frames_are_refused() {
        let id = Uuid::now_v7();
        let good = frame(id, "t", b"1");
        assert!(decode(&good, 2).is_err(), "fewer frames than n");
        assert!(decode(&good, 0).is_err(), "more frames than n");
        assert!(decode(&good[..good.len() - 1], 1).is_err(), "truncated");
        let mut flagged = good.clone();
        flagged[4] = 1;
        assert!(decode(&flagged, 1).is_err(), "flags must be 0");
        assert!(
            decode(&frame(Uuid::new_v4(), "t", b"1"), 1).is_err(),
            "v4 id"
        );
        assert!(decode(&frame(id, "t", b"{"), 1).is_err(), "not JSON");
        let mut long = good.clone();
        long[0] = 0xff;
        assert!(decode(&long, 1).is_err(), "length past the end");
        assert!(decode(&[], usize::MAX).is_err(), "a huge count");
    }
}
