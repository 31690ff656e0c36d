//! The binary push body (spec 4.2, `QPB1`) and the binary transaction
//! body (4.3, `QTB1`), decoded into the items a JSON body gives.
//!
//! ```text
//! push    := "QPB1" flags:u8 [raw_len:u32 (flags & 1)] payload   (payload one zstd frame when flags & 1)
//! payload := groups:u32 group*
//! group   := queue:str16 partition:str16 n:u32 item{n}                  (flags & 8 == 0)
//! item    := [transactionId:str16 (flags & 4)] len:u32 payload_json:u8[len]
//! group   := queue:str16 partition:str16 n:u32 z_len:u32 z:u8[z_len]   (flags & 8; z: n stored frames)
//! txn     := "QTB1" flags:u8 head_len:u32 head:u8[head_len] groups:u32 group*   (groups as with flag 8)
//! ```

use storage::{Content, PushItem, Record, DEFAULT_PARTITION};

use super::reader::Reader;
use super::{frames, zstd_frame, BinaryError};

const ZSTD: u8 = 1;
const COUNTS: u8 = 2;
const TXN_IDS: u8 = 4;
const FRAMES: u8 = 8;

/// A decoded binary push.
#[derive(Debug)]
pub(in crate::http) struct Push {
    /// The items, in body order, without a producer subject.
    pub items: Vec<PushItem>,
    /// Flag 2: answer with the counts only.
    pub counts: bool,
}

/// A decoded binary transaction.
#[derive(Debug)]
pub(in crate::http) struct Transaction<'a> {
    /// The JSON transaction body without its pushes.
    pub head: &'a [u8],
    /// The pushed items, in group order.
    pub pushes: Vec<PushItem>,
    /// Flag 2: count the pushes' and acks' results instead of listing them.
    pub counts: bool,
}

/// Decodes a `QPB1` body; `limit` bounds what its zstd frames inflate to,
/// all together.
pub(in crate::http) fn decode_push(body: &[u8], limit: usize) -> Result<Push, BinaryError> {
    let mut r = Reader::new(body);
    magic(&mut r, b"QPB1", "QPB1")?;
    let flags = r.u8("flags")?;
    if flags & !(ZSTD | COUNTS | TXN_IDS | FRAMES) != 0 {
        return Err(BinaryError::Flags(flags));
    }
    if flags & TXN_IDS != 0 && flags & FRAMES != 0 {
        return Err(BinaryError::Invalid(
            "flags 4 and 8 exclude each other: frames carry their transaction ids".into(),
        ));
    }
    let mut budget = limit;
    let inflated;
    let mut payload = if flags & ZSTD != 0 {
        let raw_len = r.u32("raw_len")?;
        inflated = zstd_frame::inflate(r.rest(), Some(raw_len), budget)?;
        budget -= inflated.len();
        Reader::new(&inflated)
    } else {
        r
    };
    let form = if flags & FRAMES != 0 {
        Form::Frames
    } else {
        Form::Items {
            transaction_ids: flags & TXN_IDS != 0,
        }
    };
    let items = groups(&mut payload, form, budget)?;
    payload.finish("the last group")?;
    Ok(Push {
        items,
        counts: flags & COUNTS != 0,
    })
}

/// Decodes a `QTB1` body; `limit` bounds what its zstd frames inflate to.
pub(in crate::http) fn decode_transaction(
    body: &[u8],
    limit: usize,
) -> Result<Transaction<'_>, BinaryError> {
    let mut r = Reader::new(body);
    magic(&mut r, b"QTB1", "QTB1")?;
    let flags = r.u8("flags")?;
    if flags & !COUNTS != 0 {
        return Err(BinaryError::Flags(flags));
    }
    let head_len = r.u32("head length")?;
    let head = r.take(head_len, "head")?;
    let pushes = groups(&mut r, Form::Frames, limit)?;
    r.finish("the last group")?;
    Ok(Transaction {
        head,
        pushes,
        counts: flags & COUNTS != 0,
    })
}

fn magic(r: &mut Reader<'_>, magic: &[u8; 4], name: &'static str) -> Result<(), BinaryError> {
    match r.take(4, "magic") {
        Ok(m) if m == magic => Ok(()),
        _ => Err(BinaryError::Magic(name)),
    }
}

#[derive(Clone, Copy)]
enum Form {
    Items { transaction_ids: bool },
    Frames,
}

/// `groups:u32 group*`, each group's items with its queue and partition.
fn groups(r: &mut Reader<'_>, form: Form, mut budget: usize) -> Result<Vec<PushItem>, BinaryError> {
    let count = r.u32("group count")?;
    let mut items = Vec::new();
    for _ in 0..count {
        let queue = r.str16("queue name")?;
        let partition = match r.str16("partition name")? {
            "" => DEFAULT_PARTITION,
            p => p,
        };
        let n = r.u32("item count")?;
        let records = match form {
            Form::Items { transaction_ids } => group_items(r, n, transaction_ids)?,
            Form::Frames => {
                let z_len = r.u32("frames length")?;
                let raw = zstd_frame::inflate(r.take(z_len, "frames")?, None, budget)?;
                budget -= raw.len();
                frames::decode(&raw, n)?
            }
        };
        items.extend(records.into_iter().map(|record| PushItem {
            queue: queue.to_owned(),
            partition: partition.to_owned(),
            record,
        }));
    }
    Ok(items)
}

/// `n` items of the unframed form.
fn group_items(
    r: &mut Reader<'_>,
    n: usize,
    transaction_ids: bool,
) -> Result<Vec<Record>, BinaryError> {
    // An item is at least 4 bytes: a larger count cannot be honest.
    let mut records = Vec::with_capacity(n.min(r.remaining() / 4));
    for _ in 0..n {
        let transaction_id = if transaction_ids {
            Some(r.str16("transaction id")?).filter(|t| !t.is_empty())
        } else {
            None
        };
        let len = r.u32("payload length")?;
        let data = frames::json_payload(r.take(len, "payload")?)?;
        records.push(Record {
            message_id: storage::new_message_id(),
            transaction_id: transaction_id.map(str::to_owned),
            trace_id: None,
            producer_sub: None,
            content: Content::Json(data),
        });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of spec 4.2.
    const EXAMPLE: &[u8] = &[
        0x51, 0x50, 0x42, 0x31, 0x04, 1, 0, 0, 0, 1, 0, b'q', 1, 0, b'p', 2, 0, 0, 0, 2, 0, b't',
        b'1', 7, 0, 0, 0, b'{', b'"', b'a', b'"', b':', b'1', b'}', 0, 0, 1, 0, 0, 0, b'2',
    ];

    #[test]
    fn the_spec_example_decodes() {
        let push = decode_push(EXAMPLE, 1 << 20).expect("valid");
        assert!(!push.counts);
        assert_eq!(push.items.len(), 2);
        assert_eq!(push.items[0].queue, "q");
        assert_eq!(push.items[0].partition, "p");
        assert_eq!(push.items[0].record.transaction_id.as_deref(), Some("t1"));
        assert_eq!(
            push.items[0].record.content,
            Content::Json(r#"{"a":1}"#.into())
        );
        assert_eq!(push.items[1].record.transaction_id, None);
        assert_eq!(push.items[1].record.content, Content::Json("2".into()));
    }

    #[test]
    fn every_truncation_and_extension_of_the_example_is_refused() {
        for end in 0..EXAMPLE.len() {
            assert!(
                decode_push(&EXAMPLE[..end], 1 << 20).is_err(),
                "cut at {end}"
            );
        }
        let mut longer = EXAMPLE.to_vec();
        longer.push(0);
        assert!(decode_push(&longer, 1 << 20).is_err());
        for flags in [0x10, 0x80, 0x0c] {
            let mut bad = EXAMPLE.to_vec();
            bad[4] = flags;
            assert!(decode_push(&bad, 1 << 20).is_err(), "flags {flags:#x}");
        }
    }

    #[test]
    fn a_compressed_body_is_bounded_by_its_limit() {
        let raw = &EXAMPLE[5..];
        let mut body = b"QPB1\x05".to_vec();
        body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        body.extend(zstd::bulk::compress(raw, 1).expect("compress"));
        assert_eq!(decode_push(&body, 1 << 20).expect("valid").items.len(), 2);
        assert!(decode_push(&body, raw.len() - 1).is_err());
    }
}
