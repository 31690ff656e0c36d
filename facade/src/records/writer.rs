//! Magic-2 batches written a record at a time, as a fetch answers.
//!
//! A fetch's records come from storage read in place
//! ([`storage::RecordView`]) and each is written straight into the answer:
//! no record is decoded into an owned message and no list of them is kept,
//! which was most of the broker's work on a consumer's fetch and a
//! megabyte-scale allocation per partition. A batch's header is written
//! when it opens and its totals (length, last offset, largest timestamp,
//! count, CRC) when it closes. As in Kafka's own log, a batch's base
//! timestamp is its first record's; later records may carry negative
//! deltas.

use bytes::{BufMut, BytesMut};
use storage::record::TxnMark;
use storage::{BodyView, Header, HeaderViews, RecordView, StoredMessage};
use uuid::Uuid;

use super::{
    TimestampType, ATTR_CONTROL, ATTR_TRANSACTIONAL, CRC_START, HEADER_LEN, TRACE_ID_HEADER,
    TRANSACTION_ID_HEADER,
};

/// One record as a batch carries it.
pub(crate) struct Outgoing<'a> {
    offset: i64,
    timestamp: i64,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    headers: Headers<'a>,
    txn: Option<TxnMark>,
}

/// A record's headers, wherever they come from.
enum Headers<'a> {
    /// A Kafka record's, read in place.
    Stored(HeaderViews<'a>),
    /// A Kafka record's, decoded.
    Decoded(&'a [Header]),
    /// A native message's ids: its transaction id, and its trace id if it
    /// has one.
    Ids(Id<'a>, Option<[u8; 36]>),
}

/// A native message's transaction id: the producer's, or the message id's
/// text when it was minted.
enum Id<'a> {
    Given(&'a [u8]),
    Minted([u8; 36]),
}

impl Id<'_> {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Given(id) => id,
            Self::Minted(text) => text,
        }
    }
}

/// A uuid's lowercase hyphenated text.
fn text(id: Uuid) -> [u8; 36] {
    let mut buf = [0; 36];
    id.hyphenated().encode_lower(&mut buf);
    buf
}

impl Headers<'_> {
    /// Calls `f` with each header's name and value, in order.
    fn each(&self, mut f: impl FnMut(&[u8], Option<&[u8]>)) {
        match self {
            Self::Stored(views) => views.clone().for_each(|(k, v)| f(k, v)),
            Self::Decoded(headers) => headers.iter().for_each(|h| f(&h.key, h.value.as_deref())),
            Self::Ids(txn, trace) => {
                f(TRANSACTION_ID_HEADER.as_bytes(), Some(txn.as_bytes()));
                if let Some(trace) = trace {
                    f(TRACE_ID_HEADER.as_bytes(), Some(trace));
                }
            }
        }
    }

    fn count(&self) -> usize {
        match self {
            Self::Stored(views) => views.count(),
            Self::Decoded(headers) => headers.len(),
            Self::Ids(_, trace) => 1 + usize::from(trace.is_some()),
        }
    }
}

impl<'a> Outgoing<'a> {
    /// A record read in place at `offset`, of a segment stored at
    /// `created_at_ms` (a native message's timestamp). Only native messages
    /// carry their ids as headers: a Kafka record's minted id is never
    /// formatted (that was a third of a fetch's work).
    pub(crate) fn stored(offset: i64, created_at_ms: i64, view: &RecordView<'a>) -> Self {
        match &view.body {
            BodyView::Kafka(k) => Self {
                offset,
                timestamp: k.timestamp_ms,
                key: k.key,
                value: k.value,
                headers: Headers::Stored(k.headers.clone()),
                txn: view.txn,
            },
            BodyView::Json(json) => Self {
                offset,
                timestamp: created_at_ms,
                key: None,
                value: Some(json),
                headers: Headers::Ids(
                    view.transaction_id
                        .map_or_else(|| Id::Minted(text(view.message_id)), Id::Given),
                    view.trace_id.map(text),
                ),
                txn: None,
            },
        }
    }

    /// A decoded message.
    pub(crate) fn decoded(m: &'a StoredMessage) -> Self {
        let r = &m.record;
        match &r.content {
            storage::Content::Kafka(k) => Self {
                offset: m.offset,
                timestamp: k.timestamp_ms,
                key: k.key.as_deref(),
                value: k.value.as_deref(),
                headers: Headers::Decoded(&k.headers),
                txn: k.txn,
            },
            storage::Content::Json(json) => Self {
                offset: m.offset,
                timestamp: m.created_at_ms,
                key: None,
                value: Some(json.as_bytes()),
                headers: Headers::Ids(
                    r.transaction_id.as_deref().map_or_else(
                        || Id::Minted(text(r.message_id)),
                        |id| Id::Given(id.as_bytes()),
                    ),
                    r.trace_id.map(text),
                ),
                txn: None,
            },
        }
    }

    /// The record's length once written, for a batch based at
    /// `base_offset` and `base_timestamp` (its length prefix not counted).
    fn len(&self, base_offset: i64, base_timestamp: i64) -> usize {
        let mut headers = 0;
        self.headers
            .each(|k, v| headers += nullable_len(Some(k)) + nullable_len(v));
        1 + varlong_len(self.timestamp.wrapping_sub(base_timestamp))
            + varlong_len(self.offset.wrapping_sub(base_offset))
            + nullable_len(self.key)
            + nullable_len(self.value)
            + varlong_len(self.headers.count() as i64)
            + headers
    }
}

/// What a [`BatchWriter`] wrote.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Written {
    /// The records.
    pub records: usize,
    /// The last record's offset, if any was written.
    pub last_offset: Option<i64>,
    /// Whether any belongs to a Kafka transaction (or is a marker).
    pub transactional: bool,
}

/// The batch being written.
struct Open {
    start: usize,
    base_offset: i64,
    base_timestamp: i64,
    max_timestamp: i64,
    last_delta: i64,
    count: i32,
    txn: Option<TxnMark>,
}

/// Writes records (ascending offsets; a compacted topic leaves gaps) into
/// uncompressed magic-2 batches: one, unless transactions are among them,
/// whose records and markers go in batches of their own carrying the
/// producer and the transactional and control attributes, as Kafka's log
/// holds them (read_committed clients drop aborted batches by producer).
/// With [`TimestampType::LogAppend`] each append time starts a batch of its
/// own, as Kafka's log holds one batch per append, so every record keeps
/// its time.
pub(crate) struct BatchWriter<'o> {
    out: &'o mut BytesMut,
    times: TimestampType,
    began_at: usize,
    limit: usize,
    at_least_one: bool,
    open: Option<Open>,
    written: Written,
}

impl<'o> BatchWriter<'o> {
    /// A writer appending to `out` at most `limit` bytes, or one record
    /// whatever its size when `at_least_one` (KIP-74).
    pub(crate) fn new(
        out: &'o mut BytesMut,
        times: TimestampType,
        limit: usize,
        at_least_one: bool,
    ) -> Self {
        Self {
            began_at: out.len(),
            out,
            times,
            limit,
            at_least_one,
            open: None,
            written: Written::default(),
        }
    }

    /// Writes `record` and answers true, or writes nothing and answers
    /// false when it would not fit the limit.
    pub(crate) fn push(&mut self, record: &Outgoing<'_>) -> bool {
        let joins = self.open.as_ref().filter(|b| {
            b.txn == record.txn
                && (self.times == TimestampType::Create || record.timestamp == b.base_timestamp)
                && record.offset - b.base_offset <= i64::from(i32::MAX)
                && b.count < i32::MAX
        });
        let (base_offset, base_timestamp, header) = match joins {
            Some(b) => (b.base_offset, b.base_timestamp, 0),
            None => (record.offset, record.timestamp, HEADER_LEN),
        };
        let len = record.len(base_offset, base_timestamp);
        let needed = header + varlong_len(len as i64) + len;
        let used = self.out.len() - self.began_at;
        let first = self.written.records == 0 && self.at_least_one;
        if used.saturating_add(needed) > self.limit && !first {
            return false;
        }
        if header > 0 {
            self.close();
            self.open(record);
        }
        put_varlong(self.out, len as i64);
        self.out.put_i8(0);
        put_varlong(self.out, record.timestamp.wrapping_sub(base_timestamp));
        put_varlong(self.out, record.offset - base_offset);
        put_nullable(self.out, record.key);
        put_nullable(self.out, record.value);
        put_varlong(self.out, record.headers.count() as i64);
        record.headers.each(|k, v| {
            put_nullable(self.out, Some(k));
            put_nullable(self.out, v);
        });
        if let Some(b) = &mut self.open {
            b.max_timestamp = b.max_timestamp.max(record.timestamp);
            b.last_delta = record.offset - b.base_offset;
            b.count += 1;
        }
        self.written.records += 1;
        self.written.last_offset = Some(record.offset);
        self.written.transactional |= record.txn.is_some();
        true
    }

    /// Closes the last batch and tells what was written.
    pub(crate) fn finish(mut self) -> Written {
        self.close();
        self.written
    }

    /// Writes the header of a batch that starts with `first`; its totals
    /// are filled in by [`Self::close`].
    fn open(&mut self, first: &Outgoing<'_>) {
        let start = self.out.len();
        self.out.put_i64(first.offset);
        self.out.put_i32(0); // batch length
        self.out.put_i32(0); // partition leader epoch
        self.out.put_i8(2);
        self.out.put_u32(0); // CRC
        self.out.put_i16(
            self.times.attribute()
                | match first.txn {
                    None => 0,
                    Some(TxnMark { marker: None, .. }) => ATTR_TRANSACTIONAL,
                    Some(TxnMark {
                        marker: Some(_), ..
                    }) => ATTR_TRANSACTIONAL | ATTR_CONTROL,
                },
        );
        self.out.put_i32(0); // last offset delta
        self.out.put_i64(first.timestamp); // base timestamp
        self.out.put_i64(0); // max timestamp
        self.out.put_i64(first.txn.map_or(-1, |t| t.producer_id));
        self.out.put_i16(first.txn.map_or(-1, |t| t.epoch));
        self.out.put_i32(-1); // base sequence
        self.out.put_i32(0); // records
        self.open = Some(Open {
            start,
            base_offset: first.offset,
            base_timestamp: first.timestamp,
            max_timestamp: first.timestamp,
            last_delta: 0,
            count: 0,
            txn: first.txn,
        });
    }

    /// Fills in the open batch's totals and CRC.
    fn close(&mut self) {
        let Some(b) = self.open.take() else {
            return;
        };
        let batch = &mut self.out[b.start..];
        let length = (batch.len() - 12) as i32;
        batch[8..12].copy_from_slice(&length.to_be_bytes());
        batch[23..27].copy_from_slice(&(b.last_delta as i32).to_be_bytes());
        batch[35..43].copy_from_slice(&b.max_timestamp.to_be_bytes());
        batch[57..61].copy_from_slice(&b.count.to_be_bytes());
        let crc = crc32c::crc32c(&batch[CRC_START..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
    }
}

/// Writes `v` zigzag-encoded as a varint (a record's varlongs).
fn put_varlong(out: &mut BytesMut, v: i64) {
    crate::varint::put_unsigned(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// How many bytes [`put_varlong`] writes for `v`.
fn varlong_len(v: i64) -> usize {
    storage::record::varint_len(((v << 1) ^ (v >> 63)) as u64)
}

/// How many bytes [`put_nullable`] writes for `bytes`.
fn nullable_len(bytes: Option<&[u8]>) -> usize {
    match bytes {
        None => varlong_len(-1),
        Some(b) => varlong_len(b.len() as i64) + b.len(),
    }
}

fn put_nullable(out: &mut BytesMut, bytes: Option<&[u8]>) {
    match bytes {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, b.len() as i64);
            out.put_slice(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varlong_len_is_what_put_varlong_writes() {
        let edges = [0, 1, -1, 63, -64, 64, -65, 8191, 8192, i64::from(i32::MAX)];
        for v in edges.into_iter().chain([i64::MAX, i64::MIN]) {
            let mut out = BytesMut::new();
            put_varlong(&mut out, v);
            assert_eq!(varlong_len(v), out.len(), "{v}");
        }
    }
}
