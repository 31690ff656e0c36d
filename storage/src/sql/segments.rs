//! Reading a partition's segments back: from an offset (one pager for
//! fetch, pop and ack), the one holding an offset, before an offset, and
//! by timestamp. Appends write them (`append`).

use std::ops::ControlFlow;

use bytes::Bytes;
use futures_util::TryStreamExt;

use crate::backend::{on_db, Conn, Store};
use crate::error::Result;
use crate::log::TimestampedOffset;
use crate::model::PartitionId;
use crate::record::{decode_segment, segment_range, Record, StoredRecords};
use crate::sealing::Sealer;
use crate::tails::Tails;

/// The select list of a [`SegmentRow`].
const COLUMNS: &str = "base_offset, record_count, created_at, format, records";

/// The most segments one page of a [`scan`] asks for, whatever their size.
const MAX_PAGE: i64 = 16;

/// Pages of small segments may grow past [`MAX_PAGE`] rows while they stay
/// under this many bytes (judged by the rows read so far), up to
/// [`MAX_SMALL_PAGE`] rows: a compacted partition's clean part is mostly
/// one-record rows, and sixteen of them per round trip made its readers and
/// its cleaner slow.
const PAGE_BYTES: i64 = 1 << 20;

/// The most small segments one page asks for.
const MAX_SMALL_PAGE: i64 = 1_024;

/// A stored segment as read back.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SegmentRow {
    pub base_offset: i64,
    #[sqlx(rename = "record_count")]
    pub count: i64,
    pub created_at: i64,
    pub format: i16,
    pub records: Vec<u8>,
}

impl SegmentRow {
    /// Every record of the segment, in offset order.
    pub(crate) fn decode(self, sealer: &Sealer) -> Result<Vec<Record>> {
        let records = sealer.open(self.records)?;
        decode_segment(self.format, Bytes::from(records), self.count as usize)
    }

    /// The offset after the segment's last record.
    pub(crate) fn end(&self) -> i64 {
        self.base_offset + self.count
    }

    /// The segment with its records in clear, ready for reads of any part.
    fn open(self, sealer: &Sealer) -> Result<Opened> {
        Ok(Opened {
            base_offset: self.base_offset,
            count: self.count,
            created_at: self.created_at,
            format: self.format,
            records: Bytes::from(sealer.open(self.records)?),
        })
    }
}

/// A segment opened for reading, its records in clear: any part of it can
/// be decoded again without another read (see [`crate::tails`]).
#[derive(Debug)]
pub(crate) struct Opened {
    pub base_offset: i64,
    pub count: i64,
    pub created_at: i64,
    pub format: i16,
    pub records: Bytes,
}

impl Opened {
    /// The offset after the segment's last record.
    pub(crate) fn end(&self) -> i64 {
        self.base_offset + self.count
    }

    /// Records `skip .. skip + take` of the segment as stored, stepped to
    /// but not decoded: a reader reads them in place or decodes them as
    /// it takes them.
    pub(crate) fn stored_range(&self, skip: usize, take: usize) -> Result<StoredRecords> {
        let count = usize::try_from(self.count).unwrap_or(0);
        let (records, take) = segment_range(self.format, self.records.clone(), count, skip, take)?;
        let first = self.base_offset + skip as i64;
        let left = count.saturating_sub(skip);
        Ok(StoredRecords::new(
            first,
            self.created_at,
            take,
            left,
            records,
        ))
    }
}

/// Visits, in offset order, the segments of the partition that hold
/// offsets at or after `from`, until `visit` breaks or the partition ends.
///
/// Segments are asked for a page at a time (1, 2, 4, … up to 16 rows: one
/// segment often holds a whole batch; more when the rows are small, see
/// [`PAGE_BYTES`]) and streamed: PostgreSQL sends every row a query selects, whether or not the
/// reader stops early, so an open-ended range would ship the whole rest of
/// a long partition to a reader that wants one batch of it. The first page
/// starts at the segment holding `from`, found through the primary key
/// rather than by scanning the partition.
pub(crate) async fn scan(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    from: i64,
    visit: impl FnMut(SegmentRow) -> Result<ControlFlow<()>>,
) -> Result<()> {
    scan_pages(conn, partition_id, from, None, visit).await
}

/// [`scan`], or with `resume_at` the segments from that offset on (the end
/// of a segment the caller already has) whatever `from` is.
async fn scan_pages(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    from: i64,
    mut resume_at: Option<i64>,
    mut visit: impl FnMut(SegmentRow) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let first = format!(
        "SELECT {COLUMNS} FROM segments WHERE partition_id = $1 AND base_offset >= COALESCE(\
         (SELECT MAX(base_offset) FROM segments WHERE partition_id = $1 AND base_offset <= $2), 0) \
         ORDER BY base_offset LIMIT $3"
    );
    // A page goes on from the end of the last segment read, not from its
    // base: compaction may have replaced that segment with smaller ones
    // meanwhile, and those must not be read a second time.
    let next = format!(
        "SELECT {COLUMNS} FROM segments WHERE partition_id = $1 AND base_offset >= $2 \
         ORDER BY base_offset LIMIT $3"
    );
    let mut page: i64 = 1;
    let (mut rows_read, mut bytes_read) = (0i64, 0i64);
    loop {
        let sql = if resume_at.is_some() { &next } else { &first };
        let (rows, stopped) = on_db!(conn, c => {
            let mut stream = sqlx::query_as::<_, SegmentRow>(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(partition_id)
                .bind(resume_at.unwrap_or(from))
                .bind(page)
                .fetch(&mut **c);
            let (mut rows, mut stopped) = (0, false);
            while let Some(segment) = stream.try_next().await? {
                rows += 1;
                bytes_read += segment.records.len() as i64;
                resume_at = Some(segment.end());
                if segment.end() > from && visit(segment)?.is_break() {
                    stopped = true;
                    break;
                }
            }
            (rows, stopped)
        });
        if stopped || rows < page {
            return Ok(());
        }
        rows_read += rows;
        let small_rows = PAGE_BYTES / (bytes_read / rows_read).max(1);
        page = (page * 2).min(small_rows.clamp(MAX_PAGE, MAX_SMALL_PAGE));
    }
}

/// Records of the partition from offset `from` on, as stored: up to
/// `max_messages`, and no more than fit in `max_bytes` (the first message
/// always does).
///
/// A message's size is its share of its segment's stored bytes, so a read
/// can end inside a segment: only the records it returns are stepped over
/// or handed out, and the next read from there starts with the rest.
/// Counting a whole segment for its tail (as reads once did) made a fetch
/// that resumed mid-segment answer with that tail alone, every other fetch.
/// The segment a read ends inside is kept in `tails`, where the next read
/// finds it.
pub(crate) async fn read(
    store: &Store,
    sealer: &Sealer,
    tails: &Tails,
    partition_id: PartitionId,
    from: i64,
    max_messages: usize,
    max_bytes: usize,
) -> Result<Vec<StoredRecords>> {
    let mut out = Vec::new();
    let mut next = from;
    let (mut bytes, mut messages) = (0, 0);
    let kept = Kept {
        sealer,
        tails: Some(tails),
    };
    kept.scan(Source::Reader(store), partition_id, from, |segment| {
        let room = Room {
            messages: max_messages - messages,
            bytes: max_bytes.saturating_sub(bytes),
            at_least_one: messages == 0,
        };
        let (skip, take, each) = span(segment, next, room);
        let stored = segment.stored_range(skip, take)?;
        let taken = stored.len();
        if taken > 0 {
            messages += taken;
            bytes += taken * each;
            next = segment.base_offset + (skip + taken) as i64;
            out.push(stored);
        }
        Ok(if next < segment.end() {
            Visit::StopInside
        } else if messages < max_messages {
            Visit::Next
        } else {
            Visit::Stop
        })
    })
    .await?;
    Ok(out)
}

/// What a visitor of [`Kept::scan`] does after a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visit {
    /// Go on to the next segment.
    Next,
    /// Stop: the segment was read to its end.
    Stop,
    /// Stop inside the segment: the next read goes on from there, so the
    /// segment is kept in the tails.
    StopInside,
}

/// Where [`Kept::scan`] reads the segments that are not kept.
pub(crate) enum Source<'s, 'c> {
    /// A reader taken from the store only if one is needed.
    Reader(&'s Store),
    /// The connection of a transaction.
    Conn(&'s mut Conn<'c>),
}

/// Segment reads that go through the [`Tails`]: the segment a read stops
/// inside is kept, and a read starting inside a kept segment begins with it
/// instead of reading it from the database again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kept<'a> {
    /// Opens the segments of encrypted queues.
    pub sealer: &'a Sealer,
    /// Where segments are kept between reads; `None` keeps nothing, for
    /// reads in a transaction that may yet roll back segments it appended
    /// itself.
    pub tails: Option<&'a Tails>,
}

impl Kept<'_> {
    /// Visits, in offset order, the opened segments of the partition that
    /// hold offsets at or after `from` (as [`scan`]), until `visit` stops
    /// or the partition ends.
    pub(crate) async fn scan(
        self,
        source: Source<'_, '_>,
        partition_id: PartitionId,
        from: i64,
        mut visit: impl FnMut(&Opened) -> Result<Visit>,
    ) -> Result<()> {
        let mut stopped_inside = None;
        let mut see = |segment: Opened| -> Result<ControlFlow<()>> {
            Ok(match visit(&segment)? {
                Visit::Next => ControlFlow::Continue(()),
                Visit::Stop => ControlFlow::Break(()),
                Visit::StopInside => {
                    stopped_inside = Some(segment);
                    ControlFlow::Break(())
                }
            })
        };
        let mut resume_at = None;
        let mut done = false;
        if let Some(tail) = self.tails.and_then(|t| t.take(partition_id, from)) {
            resume_at = Some(tail.end());
            done = see(tail)?.is_break();
        }
        if !done {
            let see = |row: SegmentRow| see(row.open(self.sealer)?);
            match source {
                Source::Reader(store) => {
                    let mut reader = store.read_conn().await?;
                    scan_pages(&mut reader.conn(), partition_id, from, resume_at, see).await?;
                }
                Source::Conn(conn) => scan_pages(conn, partition_id, from, resume_at, see).await?,
            }
        }
        if let (Some(tails), Some(segment)) = (self.tails, stopped_inside) {
            tails.keep(partition_id, segment);
        }
        Ok(())
    }
}

/// What a read may still take.
#[derive(Debug, Clone, Copy)]
struct Room {
    /// Messages.
    messages: usize,
    /// Stored bytes (a message counts its share of its segment's).
    bytes: usize,
    /// Whether one message is taken whatever its size.
    at_least_one: bool,
}

/// Which records of `segment` a read at `next` takes within `room`: how
/// many it skips, how many it takes, and the stored bytes each counts for.
fn span(segment: &Opened, next: i64, room: Room) -> (usize, usize, usize) {
    let count = usize::try_from(segment.count).unwrap_or(0).max(1);
    let skip = usize::try_from(next - segment.base_offset)
        .unwrap_or(0)
        .min(count);
    let available = count - skip;
    // Every message of a segment counts the same share of it, rounded up.
    let each = segment.records.len().div_ceil(count).max(1);
    let mut take = available.min(room.messages).min(room.bytes / each);
    if take == 0 && room.at_least_one {
        take = available.min(room.messages).min(1);
    }
    (skip, take, each)
}

/// The segment of the partition that holds `offset`, if still stored.
pub(crate) async fn at(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    offset: i64,
) -> Result<Option<SegmentRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM segments WHERE partition_id = $1 AND base_offset <= $2 \
         ORDER BY base_offset DESC LIMIT 1"
    );
    let row: Option<SegmentRow> = on_db!(conn, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(partition_id)
        .bind(offset)
        .fetch_optional(&mut **c)
        .await?);
    Ok(row.filter(|s| offset < s.end()))
}

/// Up to `max_rows` segments that start before `before`, newest first.
pub(crate) async fn before(
    store: &Store,
    partition_id: PartitionId,
    before: i64,
    max_rows: i64,
) -> Result<Vec<SegmentRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM segments WHERE partition_id = $1 AND base_offset < $2 \
         ORDER BY base_offset DESC LIMIT $3"
    );
    Ok(
        on_db!(store.reader(), pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(partition_id)
        .bind(before)
        .bind(max_rows)
        .fetch_all(pool)
        .await?),
    )
}

/// The first message stamped at or after `timestamp`.
pub(crate) async fn offset_for_timestamp(
    store: &Store,
    sealer: &Sealer,
    partition_id: PartitionId,
    timestamp: i64,
) -> Result<Option<TimestampedOffset>> {
    // Each segment keeps its largest record timestamp: the first segment
    // reaching `timestamp` holds the message.
    let sql = format!(
        "SELECT {COLUMNS} FROM segments WHERE partition_id = $1 AND max_timestamp >= $2 \
         ORDER BY base_offset LIMIT 1"
    );
    let row: Option<SegmentRow> = on_db!(store.reader(), pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(partition_id)
        .bind(timestamp)
        .fetch_optional(pool)
        .await?);
    let Some(row) = row else { return Ok(None) };
    Ok(stamped(row, sealer)?.find(|m| m.timestamp_ms >= timestamp))
}

/// The message with the largest timestamp (the first of equals).
pub(crate) async fn max_timestamp_offset(
    store: &Store,
    sealer: &Sealer,
    partition_id: PartitionId,
) -> Result<Option<TimestampedOffset>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM segments WHERE partition_id = $1 \
         ORDER BY max_timestamp DESC, base_offset LIMIT 1"
    );
    let row: Option<SegmentRow> = on_db!(store.reader(), pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(partition_id)
        .fetch_optional(pool)
        .await?);
    let Some(row) = row else { return Ok(None) };
    Ok(
        stamped(row, sealer)?.fold(None, |best: Option<TimestampedOffset>, m| match best {
            Some(b) if b.timestamp_ms >= m.timestamp_ms => Some(b),
            _ => Some(m),
        }),
    )
}

/// The offset and timestamp of every message of a segment.
fn stamped(
    segment: SegmentRow,
    sealer: &Sealer,
) -> Result<impl Iterator<Item = TimestampedOffset>> {
    let base = segment.base_offset;
    let created_at_ms = segment.created_at;
    Ok(segment
        .decode(sealer)?
        .into_iter()
        .enumerate()
        .map(move |(i, r)| TimestampedOffset {
            offset: base + i as i64,
            timestamp_ms: r.timestamp_ms().unwrap_or(created_at_ms),
        }))
}
