//! A stored record read in place.
//!
//! [`RecordView`]'s fields borrow the segment's bytes, so a reader that
//! only passes a record on (a Kafka fetch writing its answer) neither
//! allocates nor counts references per record: decoding every record of an
//! 8 MiB fetch into owned [`Record`]s, then encoding those, was most of
//! what the broker spent on it. [`Record::decode`] is this parse followed
//! by taking ownership, so there is one reader of the layout.

use bytes::Bytes;
use uuid::Uuid;

use super::{
    corrupt, unzigzag, Content, Header, KafkaRecord, Marker, Record, TxnMark, KAFKA, KEY,
    MINTED_TXN, PRODUCER_SUB, TRACE, TXN, VALUE,
};
use crate::error::Result;
use crate::model::StoredMessage;

/// One stored record, its variable fields borrowed from the segment.
#[derive(Debug, Clone)]
pub struct RecordView<'a> {
    /// The message id (UUIDv7).
    pub message_id: Uuid,
    /// The producer's transaction id as stored; `None` when it was minted
    /// (then it is the message id's text).
    pub transaction_id: Option<&'a [u8]>,
    /// The trace id the producer attached, if any.
    pub trace_id: Option<Uuid>,
    /// Who pushed it (see [`Record::producer_sub`]), as stored.
    pub producer_sub: Option<&'a [u8]>,
    /// The Kafka transaction it belongs to, or which marker it is.
    pub txn: Option<TxnMark>,
    /// The payload.
    pub body: BodyView<'a>,
}

/// What a [`RecordView`] carries besides its ids.
#[derive(Debug, Clone)]
pub enum BodyView<'a> {
    /// A native message's JSON text, as stored.
    Json(&'a [u8]),
    /// A Kafka record.
    Kafka(KafkaView<'a>),
}

/// A Kafka record read in place.
#[derive(Debug, Clone)]
pub struct KafkaView<'a> {
    /// The record timestamp in milliseconds.
    pub timestamp_ms: i64,
    /// The key; `None` is a null key.
    pub key: Option<&'a [u8]>,
    /// The value; `None` is a null value.
    pub value: Option<&'a [u8]>,
    /// The headers, in record order.
    pub headers: HeaderViews<'a>,
}

/// A record's headers read in place: name and optional value of each.
/// They were checked whole when the record was parsed.
#[derive(Debug, Clone)]
pub struct HeaderViews<'a> {
    left: usize,
    raw: &'a [u8],
}

impl HeaderViews<'_> {
    /// How many headers the record has.
    pub fn count(&self) -> usize {
        self.left
    }
}

impl<'a> Iterator for HeaderViews<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        // Checked when the record was parsed, so this cannot fail; if it
        // did, the headers would end early rather than panic.
        match take_header(&mut self.raw) {
            Ok(header) => Some(header),
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }
}

impl<'a> RecordView<'a> {
    /// Reads one record from the front of `buf`, moving `buf` past it.
    pub fn parse(buf: &mut &'a [u8]) -> Result<Self> {
        let flags = take_u8(buf)?;
        let message_id = take_uuid(buf)?;
        let transaction_id = (flags & MINTED_TXN == 0)
            .then(|| take_bytes(buf))
            .transpose()?;
        let trace_id = (flags & TRACE != 0).then(|| take_uuid(buf)).transpose()?;
        let producer_sub = (flags & PRODUCER_SUB != 0)
            .then(|| take_bytes(buf))
            .transpose()?;
        let txn = (flags & TXN != 0).then(|| take_txn(buf)).transpose()?;
        let body = if flags & KAFKA == 0 {
            BodyView::Json(take_bytes(buf)?)
        } else {
            let timestamp_ms = unzigzag(take_varint(buf)?);
            let key = (flags & KEY != 0).then(|| take_bytes(buf)).transpose()?;
            let value = (flags & VALUE != 0).then(|| take_bytes(buf)).transpose()?;
            let count = take_varint(buf)?;
            let start = *buf;
            for _ in 0..count {
                take_header(buf)?;
            }
            let raw = &start[..start.len() - buf.len()];
            let left = usize::try_from(count).map_err(|_| corrupt("header count"))?;
            BodyView::Kafka(KafkaView {
                timestamp_ms,
                key,
                value,
                headers: HeaderViews { left, raw },
            })
        };
        Ok(Self {
            message_id,
            transaction_id,
            trace_id,
            producer_sub,
            txn,
            body,
        })
    }

    /// The owned record, its byte fields slices of `whole` (the buffer the
    /// view was parsed from) and its text checked.
    pub(crate) fn to_record(&self, whole: &Bytes) -> Result<Record> {
        let text = |raw: &[u8], what| {
            std::str::from_utf8(raw)
                .map(str::to_owned)
                .map_err(|_| corrupt(what))
        };
        let content = match &self.body {
            BodyView::Json(json) => Content::Json(text(json, "json payload")?),
            BodyView::Kafka(k) => Content::Kafka(KafkaRecord {
                key: k.key.map(|key| whole.slice_ref(key)),
                value: k.value.map(|value| whole.slice_ref(value)),
                headers: k
                    .headers
                    .clone()
                    .map(|(key, value)| Header {
                        key: whole.slice_ref(key),
                        value: value.map(|v| whole.slice_ref(v)),
                    })
                    .collect(),
                timestamp_ms: k.timestamp_ms,
                txn: self.txn,
            }),
        };
        Ok(Record {
            message_id: self.message_id,
            transaction_id: self
                .transaction_id
                .map(|t| text(t, "transaction id"))
                .transpose()?,
            trace_id: self.trace_id,
            producer_sub: self
                .producer_sub
                .map(|s| text(s, "producer subject"))
                .transpose()?,
            content,
        })
    }
}

/// Records of a segment read in place, one parsed when taken; after a
/// damaged record's error it yields nothing more.
#[derive(Debug, Clone)]
struct RecordViews<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> RecordViews<'a> {
    /// The first `count` records stored at the front of `records`.
    pub(crate) fn new(records: &'a [u8], count: usize) -> Self {
        Self {
            rest: records,
            left: count,
        }
    }
}

impl<'a> Iterator for RecordViews<'a> {
    type Item = Result<RecordView<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        let record = RecordView::parse(&mut self.rest);
        if record.is_err() {
            self.left = 0;
        }
        Some(record)
    }
}

/// Records of one segment as stored, from the first one a read took: what
/// a Kafka fetch writes its answer from, without decoding them first.
#[derive(Debug, Clone)]
pub struct StoredRecords {
    /// The offset of the first record.
    pub first_offset: i64,
    /// When the segment was stored, ms since the epoch (a native message's
    /// timestamp).
    pub created_at_ms: i64,
    count: usize,
    /// The records, then the rest of their segment.
    records: Bytes,
    stored_len: usize,
}

impl StoredRecords {
    /// The first `count` of the `left` records stored in `records` (the
    /// rest of a segment), the first at `first_offset`.
    pub(crate) fn new(
        first_offset: i64,
        created_at_ms: i64,
        count: usize,
        left: usize,
        records: Bytes,
    ) -> Self {
        // A segment's records are near one size: their share of the rest.
        let stored_len = match left {
            0 => 0,
            left => records.len().saturating_mul(count) / left,
        };
        Self {
            first_offset,
            created_at_ms,
            count,
            records,
            stored_len,
        }
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// About the stored bytes of its records: their share of the rest of
    /// their segment, which is what sizes a buffer for them.
    pub fn stored_len(&self) -> usize {
        self.stored_len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Its records in offset order, each with its offset.
    pub fn iter(&self) -> impl Iterator<Item = Result<(i64, RecordView<'_>)>> + '_ {
        let first = self.first_offset;
        RecordViews::new(&self.records, self.count)
            .zip(first..)
            .map(|(view, offset)| view.map(|v| (offset, v)))
    }

    /// Its records decoded, each owning its fields (byte fields share the
    /// segment's buffer rather than copy it).
    pub fn decode(&self) -> impl Iterator<Item = Result<StoredMessage>> + '_ {
        self.iter().map(|read| {
            let (offset, view) = read?;
            Ok(StoredMessage {
                offset,
                created_at_ms: self.created_at_ms,
                record: view.to_record(&self.records)?,
            })
        })
    }
}

fn take_txn(buf: &mut &[u8]) -> Result<TxnMark> {
    let producer_id = unzigzag(take_varint(buf)?);
    let epoch =
        i16::try_from(unzigzag(take_varint(buf)?)).map_err(|_| corrupt("producer epoch"))?;
    let marker = match take_u8(buf)? {
        0 => None,
        1 => Some(Marker::Abort),
        2 => Some(Marker::Commit),
        _ => return Err(corrupt("transaction marker")),
    };
    Ok(TxnMark {
        producer_id,
        epoch,
        marker,
    })
}

/// One header: its name, then its value's length plus one (0 is null).
fn take_header<'a>(buf: &mut &'a [u8]) -> Result<(&'a [u8], Option<&'a [u8]>)> {
    let key = take_bytes(buf)?;
    let value = match take_varint(buf)? {
        0 => None,
        n => Some(take_exact(buf, n - 1)?),
    };
    Ok((key, value))
}

fn take_u8(buf: &mut &[u8]) -> Result<u8> {
    let (&byte, rest) = buf.split_first().ok_or_else(|| corrupt("length"))?;
    *buf = rest;
    Ok(byte)
}

fn take_varint(buf: &mut &[u8]) -> Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = take_u8(buf)?;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(corrupt("varint"))
}

fn take_exact<'a>(buf: &mut &'a [u8], n: u64) -> Result<&'a [u8]> {
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= buf.len())
        .ok_or_else(|| corrupt("length"))?;
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Ok(head)
}

fn take_bytes<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8]> {
    let n = take_varint(buf)?;
    take_exact(buf, n)
}

fn take_uuid(buf: &mut &[u8]) -> Result<Uuid> {
    let raw = take_exact(buf, 16)?;
    Uuid::from_slice(raw).map_err(|_| corrupt("uuid"))
}
