//! The stored form of a message, and the packing of many into one segment.
//!
//! A segment is one row per appended batch; its `records` column is the
//! concatenation of the records below, in offset order. One layout serves
//! both front doors: a native JSON message and a Kafka record differ only in
//! their [`Content`].
//!
//! ```text
//! record  := flags:u8 message_id:[16]
//!            [txn_len:varint txn:bytes]            unless MINTED_TXN
//!            [trace_id:[16]]                       if TRACE
//!            [sub_len:varint sub:bytes]            if PRODUCER_SUB
//!            [producer:zigzag-varint epoch:zigzag-varint kind:u8]   if TXN
//!            json_len:varint json:bytes            if not KAFKA
//!            timestamp:zigzag-varint               if KAFKA
//!            [key_len:varint key:bytes]            if KAFKA and KEY
//!            [value_len:varint value:bytes]        if KAFKA and VALUE
//!            headers:varint header{headers}        if KAFKA
//! header  := key_len:varint key:bytes value_len_plus_one:varint value:bytes   (0 = null value)
//! ```
//!
//! A minted transaction id is the message id's text, so it is not stored.

mod view;

use bytes::{Buf, Bytes};
use uuid::Uuid;

use crate::error::{Result, StorageError};
pub use view::{BodyView, HeaderViews, KafkaView, RecordView, StoredRecords};

/// The layout version written into every segment row.
pub const FORMAT_V1: i16 = 1;

// A record starts with its flags byte. Sealed blobs start with a byte no
// combination of flags makes (`sealing.rs`), which is how readers tell them
// apart: a new flag must keep every combination below it.
const KAFKA: u8 = 1;
const MINTED_TXN: u8 = 2;
const TRACE: u8 = 4;
const KEY: u8 = 8;
const VALUE: u8 = 16;
/// Added after the first segments were written: records without it (all
/// older ones) simply have no producer subject.
const PRODUCER_SUB: u8 = 32;
/// A Kafka record of a transaction, or a transaction marker; added with
/// Kafka transactions, so older records have none.
const TXN: u8 = 64;

/// A transaction marker's kind, as Kafka's control records carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// The transaction aborted: readers drop its records.
    Abort,
    /// The transaction committed.
    Commit,
}

/// The transactional producer a Kafka record came from; for a marker
/// (a control record), which marker it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMark {
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub epoch: i16,
    /// `Some` for a commit or abort marker, `None` for a data record.
    pub marker: Option<Marker>,
}

/// A Kafka record header: a name and an optional value, both kept as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header name.
    pub key: Bytes,
    /// The header value; `None` is a null value.
    pub value: Option<Bytes>,
}

/// A record that arrived over the Kafka protocol, kept byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaRecord {
    /// The record key; `None` is a null key.
    pub key: Option<Bytes>,
    /// The record value; `None` is a null value (a tombstone).
    pub value: Option<Bytes>,
    /// The headers in record order, duplicates kept.
    pub headers: Vec<Header>,
    /// The record timestamp in milliseconds.
    pub timestamp_ms: i64,
    /// The transaction it belongs to, for a transactional producer's
    /// record or a transaction marker.
    pub txn: Option<TxnMark>,
}

/// What a message carries besides its ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A native message: its `data` as compact JSON text.
    Json(String),
    /// A Kafka record.
    Kafka(KafkaRecord),
}

/// One message as stored in a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The message id (UUIDv7).
    pub message_id: Uuid,
    /// The producer's transaction id; `None` when it was minted, in which
    /// case it is the message id's text.
    pub transaction_id: Option<String>,
    /// The trace id the producer attached, if any.
    pub trace_id: Option<Uuid>,
    /// Who pushed it, as the HTTP door authenticated them (the JWT `sub`
    /// or the Basic user name): the spec's `producerSub`. Never taken from
    /// a request body.
    pub producer_sub: Option<String>,
    /// The payload.
    pub content: Content,
}

impl Record {
    /// The effective transaction id: the producer's, or the minted one.
    pub fn transaction_id(&self) -> String {
        self.with_transaction_id(str::to_owned)
    }

    /// Calls `f` with [`Self::transaction_id`] without allocating it: for
    /// a comparison or a hash, once per record on the ack and dedup paths.
    pub(crate) fn with_transaction_id<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match &self.transaction_id {
            Some(txn) => f(txn),
            None => {
                let mut buf = uuid::Uuid::encode_buffer();
                f(self.message_id.hyphenated().encode_lower(&mut buf))
            }
        }
    }

    /// Whether [`Self::transaction_id`] is `txn`, without allocating it.
    pub(crate) fn has_transaction_id(&self, txn: &str) -> bool {
        self.with_transaction_id(|id| id == txn)
    }

    /// The dedup hash of [`Self::transaction_id`], without copying the id.
    pub(crate) fn txn_hash(&self) -> i64 {
        self.with_transaction_id(crate::append::txn_hash)
    }

    /// The record's own timestamp, for Kafka records; a native message's
    /// time is its segment's creation time.
    pub fn timestamp_ms(&self) -> Option<i64> {
        match &self.content {
            Content::Kafka(k) => Some(k.timestamp_ms),
            Content::Json(_) => None,
        }
    }

    /// The Kafka transaction the record belongs to (or, for a commit or
    /// abort marker, which marker it is); `None` for everything else.
    pub fn txn(&self) -> Option<TxnMark> {
        match &self.content {
            Content::Kafka(k) => k.txn,
            Content::Json(_) => None,
        }
    }

    /// How many bytes [`Self::encode`] appends: what sizes a segment's
    /// buffer before its records are written into it.
    pub fn encoded_len(&self) -> usize {
        let bytes = |b: &[u8]| varint_len(b.len() as u64) + b.len();
        let mut n = 1 + 16;
        n += self
            .transaction_id
            .as_deref()
            .map_or(0, |t| bytes(t.as_bytes()));
        n += self.trace_id.map_or(0, |_| 16);
        n += self
            .producer_sub
            .as_deref()
            .map_or(0, |s| bytes(s.as_bytes()));
        match &self.content {
            Content::Json(json) => n + bytes(json.as_bytes()),
            Content::Kafka(k) => {
                if let Some(t) = k.txn {
                    n += varint_len(zigzag(t.producer_id))
                        + varint_len(zigzag(i64::from(t.epoch)))
                        + 1;
                }
                n + varint_len(zigzag(k.timestamp_ms))
                    + k.key.as_deref().map_or(0, bytes)
                    + k.value.as_deref().map_or(0, bytes)
                    + varint_len(k.headers.len() as u64)
                    + k.headers
                        .iter()
                        .map(|h| {
                            bytes(&h.key)
                                + h.value
                                    .as_ref()
                                    .map_or(1, |v| varint_len(v.len() as u64 + 1) + v.len())
                        })
                        .sum::<usize>()
            }
        }
    }

    /// Appends this record's stored form to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut flags = 0;
        if self.transaction_id.is_none() {
            flags |= MINTED_TXN;
        }
        if self.trace_id.is_some() {
            flags |= TRACE;
        }
        if self.producer_sub.is_some() {
            flags |= PRODUCER_SUB;
        }
        if let Content::Kafka(k) = &self.content {
            flags |= KAFKA;
            if k.key.is_some() {
                flags |= KEY;
            }
            if k.value.is_some() {
                flags |= VALUE;
            }
            if k.txn.is_some() {
                flags |= TXN;
            }
        }
        out.push(flags);
        out.extend_from_slice(self.message_id.as_bytes());
        if let Some(txn) = &self.transaction_id {
            put_bytes(out, txn.as_bytes());
        }
        if let Some(trace) = &self.trace_id {
            out.extend_from_slice(trace.as_bytes());
        }
        if let Some(sub) = &self.producer_sub {
            put_bytes(out, sub.as_bytes());
        }
        if let Content::Kafka(KafkaRecord { txn: Some(t), .. }) = &self.content {
            put_varint(out, zigzag(t.producer_id));
            put_varint(out, zigzag(i64::from(t.epoch)));
            out.push(match t.marker {
                None => 0,
                Some(Marker::Abort) => 1,
                Some(Marker::Commit) => 2,
            });
        }
        match &self.content {
            Content::Json(json) => put_bytes(out, json.as_bytes()),
            Content::Kafka(k) => {
                put_varint(out, zigzag(k.timestamp_ms));
                if let Some(key) = &k.key {
                    put_bytes(out, key);
                }
                if let Some(value) = &k.value {
                    put_bytes(out, value);
                }
                put_varint(out, k.headers.len() as u64);
                for h in &k.headers {
                    put_bytes(out, &h.key);
                    match &h.value {
                        None => put_varint(out, 0),
                        Some(v) => {
                            put_varint(out, v.len() as u64 + 1);
                            out.extend_from_slice(v);
                        }
                    }
                }
            }
        }
    }

    /// Reads one record from the front of `buf`, advancing it; its byte
    /// fields are slices of `buf`, not copies.
    pub fn decode(buf: &mut Bytes) -> Result<Self> {
        let mut rest = &buf[..];
        let record = RecordView::parse(&mut rest)?.to_record(buf)?;
        let used = buf.len() - rest.len();
        buf.advance(used);
        Ok(record)
    }
}

/// Packs records into the `records` column of a segment.
pub fn encode_segment<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        r.encode(&mut out);
    }
    out
}

/// Unpacks the `records` column of a segment of `count` records.
pub fn decode_segment(format: i16, blob: Bytes, count: usize) -> Result<Vec<Record>> {
    let (mut blob, count) = segment_range(format, blob, count, 0, count)?;
    let records = (0..count)
        .map(|_| Record::decode(&mut blob))
        .collect::<Result<Vec<_>>>()?;
    if blob.has_remaining() {
        return Err(corrupt("trailing bytes in segment"));
    }
    Ok(records)
}

/// The stored bytes from record `skip` of a segment of `count` records on,
/// and how many records (up to `take`) a reader of that range takes: the
/// records before it are stepped over, not decoded, and those after it
/// are not read ([`StoredRecords`] reads or decodes the range). A consumer
/// reading a batch of 100 from a segment of 1,000 pays for its 100.
pub(crate) fn segment_range(
    format: i16,
    mut blob: Bytes,
    count: usize,
    skip: usize,
    take: usize,
) -> Result<(Bytes, usize)> {
    if format != FORMAT_V1 {
        return Err(corrupt("unknown segment format"));
    }
    let skip = skip.min(count);
    let take = take.min(count - skip);
    let mut rest = &blob[..];
    for _ in 0..skip {
        RecordView::parse(&mut rest)?;
    }
    let used = blob.len() - rest.len();
    blob.advance(used);
    Ok((blob, take))
}

fn corrupt(what: &str) -> StorageError {
    StorageError::Corrupt(format!("segment record: bad {what}"))
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many bytes the base-128 varint of `v` takes (as [`put_varint`]
/// writes it, and as Kafka's record fields are written).
pub fn varint_len(v: u64) -> usize {
    // One byte per started group of 7 bits; zero takes one byte too.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(txn: Option<&str>, trace: bool) -> Record {
        Record {
            message_id: Uuid::now_v7(),
            transaction_id: txn.map(str::to_owned),
            trace_id: trace.then(Uuid::new_v4),
            producer_sub: trace.then(|| "alice@example".to_owned()),
            content: Content::Json(r#"{"a":[1,"é"]}"#.to_owned()),
        }
    }

    fn kafka(key: Option<&[u8]>, value: Option<&[u8]>, ts: i64) -> Record {
        Record {
            message_id: Uuid::now_v7(),
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Kafka(KafkaRecord {
                key: key.map(Bytes::copy_from_slice),
                value: value.map(Bytes::copy_from_slice),
                headers: vec![
                    Header {
                        key: Bytes::from_static(b"h"),
                        value: None,
                    },
                    Header {
                        key: Bytes::from_static(b"h"),
                        value: Some(Bytes::from_static(&[0xff, 0, 1])),
                    },
                    Header {
                        key: Bytes::from_static(b"empty"),
                        value: Some(Bytes::new()),
                    },
                ],
                timestamp_ms: ts,
                txn: None,
            }),
        }
    }

    #[test]
    fn the_dedup_hash_is_that_of_the_effective_transaction_id() {
        for record in [json(Some("order-7"), false), json(None, false)] {
            let expected = crate::append::txn_hash(&record.transaction_id());
            assert_eq!(record.txn_hash(), expected);
        }
    }

    fn marked(mut record: Record, marker: Option<Marker>) -> Record {
        if let Content::Kafka(k) = &mut record.content {
            k.txn = Some(TxnMark {
                producer_id: 1 << 40,
                epoch: i16::MAX,
                marker,
            });
        }
        record
    }

    #[test]
    fn segments_round_trip_both_kinds() {
        let records = vec![
            json(Some("order-1"), true),
            json(None, false),
            kafka(Some(b"k"), Some(&[0, 159, 146, 150]), 1_700_000_000_000),
            kafka(None, None, -5),
            kafka(Some(b""), Some(b""), 0),
            marked(kafka(Some(b"t"), Some(b"v"), 9), None),
            marked(
                kafka(None, Some(&[0, 0, 0, 0, 0, 0]), 10),
                Some(Marker::Abort),
            ),
            marked(kafka(None, None, 11), Some(Marker::Commit)),
        ];
        let blob = encode_segment(&records);
        let lens: usize = records.iter().map(Record::encoded_len).sum();
        assert_eq!(lens, blob.len(), "encoded_len is what encode writes");
        let back = decode_segment(FORMAT_V1, Bytes::from(blob), records.len()).expect("decodes");
        assert_eq!(back, records);
        assert_eq!(back[1].transaction_id(), back[1].message_id.to_string());
        assert_eq!(back[0].transaction_id(), "order-1");
    }

    /// Records `skip .. skip + take` of the segment `blob` of `count`
    /// records, as a read takes them (offsets from `skip`).
    fn range(blob: &Bytes, count: usize, skip: usize, take: usize) -> StoredRecords {
        let (rest, take) = segment_range(FORMAT_V1, blob.clone(), count, skip, take)
            .expect("the records skipped are whole");
        StoredRecords::new(skip as i64, 0, take, count - skip.min(count), rest)
    }

    #[test]
    fn a_range_of_a_segment_decodes_the_same_records() {
        let records = vec![
            json(Some("a"), true),
            kafka(Some(b"k"), Some(&[1, 2]), 3),
            json(None, false),
            kafka(None, None, -1),
            json(Some("e"), false),
            // Skipping a transactional record steps over its producer too.
            marked(kafka(Some(b"t"), Some(b"v"), 9), None),
            marked(kafka(None, None, 11), Some(Marker::Commit)),
            kafka(Some(b"after"), None, 12),
        ];
        let blob = Bytes::from(encode_segment(&records));
        for skip in 0..=records.len() {
            for take in 0..=records.len() {
                let got: Vec<Record> = range(&blob, records.len(), skip, take)
                    .decode()
                    .map(|m| m.map(|m| m.record))
                    .collect::<Result<_>>()
                    .expect("decodes");
                let end = (skip + take).min(records.len());
                assert_eq!(got, records[skip.min(end)..end], "skip {skip} take {take}");
            }
        }
    }

    /// Records read in place say what their decoded form says: the same
    /// offsets, fields and headers, for every kind of record.
    #[test]
    fn records_read_in_place_are_the_decoded_records() {
        let records = vec![
            json(Some("a"), true),
            kafka(Some(b"k"), Some(&[1, 2]), 3),
            json(None, false),
            marked(kafka(Some(b"t"), Some(b"v"), 9), None),
            marked(kafka(None, None, 11), Some(Marker::Commit)),
            kafka(None, None, -1),
        ];
        let blob = Bytes::from(encode_segment(&records));
        let (rest, take) = segment_range(FORMAT_V1, blob, records.len(), 1, 4).expect("range");
        let stored = StoredRecords::new(41, 7, take, records.len() - 1, rest.clone());
        assert_eq!(stored.len(), 4);
        assert_eq!(stored.stored_len(), rest.len() * 4 / 5);
        let decoded: Vec<_> = stored.decode().collect::<Result<_>>().expect("decodes");
        for (i, (m, original)) in decoded.iter().zip(&records[1..5]).enumerate() {
            assert_eq!(m.offset, 41 + i as i64);
            assert_eq!(m.created_at_ms, 7);
            assert_eq!(&m.record, original);
        }
        assert_eq!(decoded.len(), 4);
        let headers: Vec<_> = stored
            .iter()
            .filter_map(|r| match r.expect("parses").1.body {
                BodyView::Kafka(k) => Some(k.headers.count()),
                BodyView::Json(_) => None,
            })
            .collect();
        assert_eq!(headers, [3, 3, 3]);
    }

    #[test]
    fn damaged_segments_are_errors_not_panics() {
        let blob = encode_segment(&[json(Some("x"), true), kafka(Some(b"k"), None, 7)]);
        for cut in 0..blob.len() {
            let r = decode_segment(FORMAT_V1, Bytes::copy_from_slice(&blob[..cut]), 2);
            assert!(r.is_err(), "cut at {cut} must fail");
        }
        assert!(decode_segment(2, Bytes::from(blob), 2).is_err());
    }

    /// A damaged record in a range is an error where it lies, after the
    /// records before it, and ends the range.
    #[test]
    fn a_damaged_record_ends_its_range_with_an_error() {
        let whole = [json(Some("x"), true), kafka(Some(b"k"), Some(b"v"), 7)];
        let first = encode_segment(&whole[..1]).len();
        let blob = encode_segment(&whole);
        for cut in first..blob.len() {
            let damaged = Bytes::copy_from_slice(&blob[..cut]);
            let got: Vec<Result<Record>> = range(&damaged, 2, 0, 2)
                .decode()
                .map(|m| m.map(|m| m.record))
                .collect();
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[0].as_ref().ok(), Some(&whole[0]), "cut at {cut}");
            assert!(got[1].is_err(), "cut at {cut} must fail");
        }
        let stored = range(&Bytes::from_static(&[0xff]), 3, 0, 3);
        let mut records = stored.decode();
        assert!(matches!(records.next(), Some(Err(_))));
        assert!(records.next().is_none(), "nothing after the damage");
    }
}
