//! The dedup index's statements: the `txn_hashes` sidecar (one row per
//! append, written by the append itself), and the sealed runs
//! (`dedup_runs`, `dedup_pages`) with their life cycle.

use crate::backend::{on_db, Conn};
use crate::dedup::run::{self, Entry, KeyedPage};
use futures_util::TryStreamExt;

use crate::dedup::filter::Filter;
use crate::dedup::{unpack_i64s, HashRow, RunState};
use crate::error::{Result, StorageError};
use crate::model::PartitionId;

/// A `txn_hashes` row as stored.
#[derive(sqlx::FromRow)]
struct Row {
    base_offset: i64,
    created_at: i64,
    hashes: Vec<u8>,
}

impl Row {
    fn unpack(self) -> Result<HashRow> {
        Ok(HashRow {
            base_offset: self.base_offset,
            created_at: self.created_at,
            hashes: unpack_i64s(&self.hashes)
                .ok_or_else(|| StorageError::Corrupt("txn_hashes row".into()))?,
        })
    }
}

/// The partition's sidecar rows from offset `from` on that were created at
/// or after `since`, in offset order: what a tail lacks.
pub(crate) async fn rows(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    from: i64,
    since: i64,
) -> Result<Vec<HashRow>> {
    let rows: Vec<Row> = on_db!(conn, c => sqlx::query_as(
        "SELECT base_offset, created_at, hashes FROM txn_hashes \
         WHERE partition_id = $1 AND base_offset >= $2 AND created_at >= $3 \
         ORDER BY base_offset",
    )
    .bind(partition_id)
    .bind(from)
    .bind(since)
    .fetch_all(&mut **c)
    .await?);
    rows.into_iter().map(Row::unpack).collect()
}

/// The first offset of the partition created at or after `since`: the
/// bottom of its window (`None` when nothing is that recent).
pub(crate) async fn window_start(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    since: i64,
) -> Result<Option<i64>> {
    Ok(on_db!(conn, c => sqlx::query_scalar(
        "SELECT base_offset FROM txn_hashes \
         WHERE partition_id = $1 AND created_at >= $2 ORDER BY created_at, base_offset LIMIT 1",
    )
    .bind(partition_id)
    .bind(since)
    .fetch_optional(&mut **c)
    .await?))
}

/// A live run as listed, without its filter.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub(crate) struct RunHead {
    pub id: i64,
    pub entries: i64,
    pub created_max: i64,
}

/// The partition's live runs, oldest first.
pub(crate) async fn live_runs(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
) -> Result<Vec<RunHead>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT id, entries, created_max FROM dedup_runs \
         WHERE partition_id = $1 AND state = 1 ORDER BY id",
    )
    .bind(partition_id)
    .fetch_all(&mut **c)
    .await?))
}

/// The fences of run `id`.
pub(crate) async fn run_fences(conn: &mut Conn<'_>, id: i64) -> Result<Vec<i64>> {
    let fences: Option<Vec<u8>> = on_db!(conn, c => sqlx::query_scalar(
        "SELECT fences FROM dedup_runs WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(&mut **c)
    .await?
    .flatten());
    fences
        .as_deref()
        .and_then(unpack_i64s)
        .ok_or_else(|| StorageError::Corrupt(format!("dedup run {id} fences")))
}

/// Bytes per stored filter chunk.
const FILTER_CHUNK: usize = 256 << 10;

/// Stores run `id`'s filter, in chunks.
pub(crate) async fn insert_filter(conn: &mut Conn<'_>, id: i64, filter: &Filter) -> Result<()> {
    for (chunk_no, bytes) in filter.as_bytes().chunks(FILTER_CHUNK).enumerate() {
        on_db!(conn, c => {
            sqlx::query("INSERT INTO dedup_filters (run_id, chunk_no, bytes) VALUES ($1, $2, $3)")
                .bind(id)
                .bind(chunk_no as i64)
                .bind(bytes)
                .execute(&mut **c)
                .await?;
        });
    }
    Ok(())
}

/// Reads run `id`'s filter, a chunk at a time.
pub(crate) async fn load_filter(conn: &mut Conn<'_>, id: i64) -> Result<Filter> {
    let mut bytes = Vec::new();
    on_db!(conn, c => {
        let mut chunks = sqlx::query_scalar::<_, Vec<u8>>(
            "SELECT bytes FROM dedup_filters WHERE run_id = $1 ORDER BY chunk_no",
        )
        .bind(id)
        .fetch(&mut **c);
        while let Some(chunk) = chunks.try_next().await? {
            bytes.extend_from_slice(&chunk);
        }
    });
    Filter::from_bytes(bytes).ok_or_else(|| StorageError::Corrupt(format!("dedup run {id} filter")))
}

/// One page of run `run_id`, decoded.
pub(crate) async fn page(conn: &mut Conn<'_>, run_id: i64, page_no: i64) -> Result<Vec<Entry>> {
    let bytes: Option<Vec<u8>> = on_db!(conn, c => sqlx::query_scalar(
        "SELECT entries FROM dedup_pages WHERE run_id = $1 AND page_no = $2",
    )
    .bind(run_id)
    .bind(page_no)
    .fetch_optional(&mut **c)
    .await?);
    let bytes = bytes
        .ok_or_else(|| StorageError::Corrupt(format!("dedup run {run_id} lacks page {page_no}")))?;
    run::decode_page(&bytes).ok_or_else(|| StorageError::Corrupt("dedup page".into()))
}

/// Decodes the rows of a read of `wanted` pages by key, (run id, page
/// number, bytes): an error unless every page was found whole.
pub(crate) fn keyed_pages(rows: Vec<(i64, i64, Vec<u8>)>, wanted: usize) -> Result<Vec<KeyedPage>> {
    if rows.len() != wanted {
        return Err(StorageError::Corrupt("a dedup run lacks a page".into()));
    }
    rows.into_iter()
        .map(|(run_id, page_no, bytes)| {
            let page = run::decode_page(&bytes)
                .ok_or_else(|| StorageError::Corrupt("dedup page".into()))?;
            Ok(((run_id, page_no), page))
        })
        .collect()
}

/// Pages of run `run_id` from `from` on, at most `limit`, in order.
pub(crate) async fn pages_from(
    conn: &mut Conn<'_>,
    run_id: i64,
    from: i64,
    limit: i64,
) -> Result<Vec<Vec<Entry>>> {
    let rows: Vec<Vec<u8>> = on_db!(conn, c => sqlx::query_scalar(
        "SELECT entries FROM dedup_pages WHERE run_id = $1 AND page_no >= $2 \
         ORDER BY page_no LIMIT $3",
    )
    .bind(run_id)
    .bind(from)
    .bind(limit)
    .fetch_all(&mut **c)
    .await?);
    rows.iter()
        .map(|b| run::decode_page(b).ok_or_else(|| StorageError::Corrupt("dedup page".into())))
        .collect()
}

/// A run about to be inserted.
#[derive(Debug)]
pub(crate) struct NewRun<'a> {
    pub partition_id: PartitionId,
    pub level: i64,
    pub state: RunState,
    pub entries: i64,
    pub created_max: i64,
    pub started_at: i64,
    pub fences: Option<&'a [u8]>,
}

/// Inserts a run's catalog row; returns its id, or `None` when it is a
/// merge and another merge into the same level of the partition is under way.
pub(crate) async fn insert_run(conn: &mut Conn<'_>, run: &NewRun<'_>) -> Result<Option<i64>> {
    Ok(on_db!(conn, c => sqlx::query_scalar(
        "INSERT INTO dedup_runs \
         (partition_id, level, state, entries, created_max, started_at, fences) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING id",
    )
    .bind(run.partition_id)
    .bind(run.level)
    .bind(run.state as i64)
    .bind(run.entries)
    .bind(run.created_max)
    .bind(run.started_at)
    .bind(run.fences)
    .fetch_optional(&mut **c)
    .await?))
}

/// Records that ids below `sealed_to` are in runs, and that the runs changed.
pub(crate) async fn set_sealed(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    sealed_to: i64,
) -> Result<()> {
    on_db!(conn, c => {sqlx::query(
        "UPDATE partitions SET dedup_sealed_to = $1, dedup_epoch = dedup_epoch + 1 WHERE id = $2",
    )
    .bind(sealed_to)
    .bind(partition_id)
    .execute(&mut **c)
    .await?;
        });
    Ok(())
}

/// The dedup window of the partition's queue, in seconds (`None` if the
/// partition is gone).
pub(crate) async fn window_seconds(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
) -> Result<Option<i64>> {
    Ok(on_db!(conn, c => sqlx::query_scalar(
        "SELECT q.dedup_window_seconds FROM partitions p JOIN queues q ON q.id = p.queue_id \
         WHERE p.id = $1",
    )
    .bind(partition_id)
    .fetch_optional(&mut **c)
    .await?))
}

/// Locks the partition row and returns its dedup epoch (`None` if it is gone).
pub(crate) async fn lock_epoch(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
) -> Result<Option<i64>> {
    let sql = format!(
        "SELECT dedup_epoch FROM partitions WHERE id = $1 {}",
        conn.row_lock()
    );
    Ok(
        on_db!(conn, c => sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(partition_id)
        .fetch_optional(&mut **c)
        .await?),
    )
}

/// Marks the runs `ids` dead if every one of them is still live; returns
/// whether they were (a merge's inputs, checked as it completes).
pub(crate) async fn retire_runs(conn: &mut Conn<'_>, ids: &[i64]) -> Result<bool> {
    let mut retired = 0;
    for id in ids {
        retired += on_db!(conn, c => sqlx::query(
            "UPDATE dedup_runs SET state = 2 WHERE id = $1 AND state = 1",
        )
        .bind(id)
        .execute(&mut **c)
        .await?
        .rows_affected());
    }
    Ok(retired == ids.len() as u64)
}

/// Makes a merged run live with its fences (its filter is stored), and
/// bumps its partition's epoch.
pub(crate) async fn publish_run(
    conn: &mut Conn<'_>,
    id: i64,
    partition_id: PartitionId,
    entries: i64,
    fences: &[u8],
) -> Result<()> {
    on_db!(conn, c => {
        sqlx::query("UPDATE dedup_runs SET state = 1, entries = $2, fences = $3 WHERE id = $1")
        .bind(id)
        .bind(entries)
        .bind(fences)
        .execute(&mut **c)
        .await?;
        sqlx::query("UPDATE partitions SET dedup_epoch = dedup_epoch + 1 WHERE id = $1")
            .bind(partition_id)
            .execute(&mut **c)
            .await?;
    });
    Ok(())
}

/// Sets run `id`'s state.
pub(crate) async fn set_state(conn: &mut Conn<'_>, id: i64, state: RunState) -> Result<()> {
    on_db!(conn, c => {sqlx::query("UPDATE dedup_runs SET state = $2 WHERE id = $1")
    .bind(id)
    .bind(state as i64)
    .execute(&mut **c)
    .await?;
    });
    Ok(())
}

/// A partition and level below `top` with at least `fanout` live runs and
/// no merge of that level under way: the next merge to do, lowest level first.
pub(crate) async fn merge_candidate(
    conn: &mut Conn<'_>,
    fanout: i64,
    top: i64,
) -> Result<Option<(PartitionId, i64)>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT partition_id, level FROM dedup_runs r WHERE state = 1 AND level < $2 \
         AND NOT EXISTS (SELECT 1 FROM dedup_runs b WHERE b.partition_id = r.partition_id \
                         AND b.level = r.level + 1 AND b.state = 0) \
         GROUP BY partition_id, level HAVING count(*) >= $1 ORDER BY level LIMIT 1",
    )
    .bind(fanout)
    .bind(top)
    .fetch_optional(&mut **c)
    .await?))
}

/// The oldest `fanout` live runs of the partition at `level`.
pub(crate) async fn merge_inputs(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    level: i64,
    fanout: i64,
) -> Result<Vec<RunHead>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT id, entries, created_max FROM dedup_runs \
         WHERE partition_id = $1 AND level = $2 AND state = 1 ORDER BY id LIMIT $3",
    )
    .bind(partition_id)
    .bind(level)
    .bind(fanout)
    .fetch_all(&mut **c)
    .await?))
}

/// Marks dead the live runs whose every id is past its queue's window (or
/// whose queue has no window any more); returns how many.
pub(crate) async fn expire_runs(conn: &mut Conn<'_>, now: i64) -> Result<u64> {
    Ok(on_db!(conn, c => sqlx::query(
        "UPDATE dedup_runs SET state = 2 WHERE state = 1 AND created_max < $1 - 1000 * \
         (SELECT q.dedup_window_seconds FROM partitions p JOIN queues q ON q.id = p.queue_id \
          WHERE p.id = dedup_runs.partition_id)",
    )
    .bind(now)
    .execute(&mut **c)
    .await?
    .rows_affected()))
}

/// Marks dead the runs of deleted partitions and the merges begun before
/// `stale` (their broker stopped); returns how many.
pub(crate) async fn abandon_runs(conn: &mut Conn<'_>, stale: i64) -> Result<u64> {
    Ok(on_db!(conn, c => sqlx::query(
        "UPDATE dedup_runs SET state = 2 WHERE state <> 2 AND \
         ((state = 0 AND started_at < $1) \
          OR partition_id NOT IN (SELECT id FROM partitions))",
    )
    .bind(stale)
    .execute(&mut **c)
    .await?
    .rows_affected()))
}

/// Deletes up to `limit` pages of one dead run, then its filter chunks,
/// then the run itself; returns how many rows went.
pub(crate) async fn sweep_dead_run(conn: &mut Conn<'_>, limit: i64) -> Result<u64> {
    on_db!(conn, c => {
        let id: Option<i64> = sqlx::query_scalar("SELECT id FROM dedup_runs WHERE state = 2 LIMIT 1")
            .fetch_optional(&mut **c)
            .await?;
        let Some(id) = id else { return Ok(0) };
        let first: Option<i64> = sqlx::query_scalar("SELECT min(page_no) FROM dedup_pages WHERE run_id = $1")
            .bind(id)
            .fetch_one(&mut **c)
            .await?;
        if let Some(first) = first {
            return Ok(sqlx::query("DELETE FROM dedup_pages WHERE run_id = $1 AND page_no < $2")
                .bind(id)
                .bind(first + limit)
                .execute(&mut **c)
                .await?
                .rows_affected());
        }
        let chunks = sqlx::query("DELETE FROM dedup_filters WHERE run_id = $1")
            .bind(id)
            .execute(&mut **c)
            .await?
            .rows_affected();
        if chunks > 0 {
            return Ok(chunks);
        }
        Ok(sqlx::query("DELETE FROM dedup_runs WHERE id = $1")
            .bind(id)
            .execute(&mut **c)
            .await?
            .rows_affected())
    })
}

/// Deletes up to `limit` sidecar rows older than their partition keeps
/// them: `max(dedupWindowSeconds, completedRetentionSeconds,
/// floor_seconds)`; returns how many.
pub(crate) async fn purge_sidecar(
    conn: &mut Conn<'_>,
    now: i64,
    floor_seconds: i64,
    limit: i64,
) -> Result<u64> {
    Ok(on_db!(conn, c => sqlx::query(
        "DELETE FROM txn_hashes WHERE (partition_id, base_offset) IN ( \
           SELECT t.partition_id, t.base_offset FROM txn_hashes t \
           JOIN partitions p ON p.id = t.partition_id JOIN queues q ON q.id = p.queue_id \
           WHERE t.created_at < $1 - 1000 * $2 \
             AND t.created_at < $1 - 1000 * q.sidecar_seconds \
           LIMIT $3)",
    )
    .bind(now)
    .bind(floor_seconds)
    .bind(limit)
    .execute(&mut **c)
    .await?
    .rows_affected()))
}

/// The offsets of the partition whose transaction id hashes to `hash`, in
/// its runs and its unsealed sidecar rows: candidates, to be confirmed
/// against the stored ids.
pub(crate) async fn candidates(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    hash: i64,
) -> Result<Vec<i64>> {
    let sealed_to: Option<i64> = on_db!(conn, c => sqlx::query_scalar(
        "SELECT dedup_sealed_to FROM partitions WHERE id = $1",
    )
    .bind(partition_id)
    .fetch_optional(&mut **c)
    .await?);
    let Some(sealed_to) = sealed_to else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for head in live_runs(conn, partition_id).await? {
        let fences = run_fences(conn, head.id).await?;
        for page_no in run::pages_for(&fences, hash) {
            out.extend(run::offsets_in(&page(conn, head.id, page_no).await?, hash));
        }
    }
    for row in rows(conn, partition_id, sealed_to, i64::MIN).await? {
        out.extend(
            row.hashes
                .iter()
                .enumerate()
                .filter(|(_, h)| **h == hash)
                .map(|(i, _)| row.base_offset + i as i64),
        );
    }
    Ok(out)
}
