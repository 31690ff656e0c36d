//! WAL checkpoints off the commit path, with a bounded WAL.
//!
//! SQLite's automatic checkpoint runs inside the commit that takes the WAL
//! past 1,000 pages: every few large appends, one commit also copies the
//! WAL into the database file and syncs it (~10 ms on the development
//! machine instead of ~2), and everything queued behind the single writer
//! waits, which a producer with one request in flight (librdkafka with
//! idempotence) feels directly. So the writer connection does not
//! checkpoint; this task does, on a connection of its own (its own thread).
//!
//! A PASSIVE checkpoint never waits, but under a steady stream of appends
//! it never finishes either: the writer adds frames while it copies, so the
//! WAL is never found fully copied and is never started again from the
//! beginning. It then grows without bound, and every commit extends the
//! file (block allocation, fresh pages, a metadata sync) instead of
//! overwriting frames already on disk. So each round copies what it can
//! PASSIVE and syncs the database file, then, if the WAL holds more than
//! [`RESTART_FRAMES`], copies PASSIVE again, pass after pass (each copying
//! and syncing what was appended during the one before), until a pass
//! finds little left, and runs a RESTART checkpoint: it copies the few
//! frames written meanwhile while holding off the writer, and makes the
//! writer's next transaction start the WAL again from the beginning. It
//! first takes the writer pool's one connection, queueing fairly behind
//! the transactions already waiting for it: a writer that starts its next
//! transaction the moment the last one commits would otherwise win the
//! write lock every time, and the WAL would grow as before. Its wait for readers to leave the WAL is bounded by the
//! connection's short busy timeout ([`BUSY_TIMEOUT`]); when it gives up,
//! appends go on and the next round tries again.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::SqlitePool;

/// How often the WAL is copied into the database (and the copy synced).
/// Often, so that each sync of the database file is small: under ext4's
/// ordered mode a commit's sync of the WAL also waits for the database
/// file's newly written blocks, and with 500 ms rounds (~50 MiB copied
/// each under a full-speed producer) commits beside it took 30-60 ms.
const EVERY: Duration = Duration::from_millis(100);

/// A WAL larger than this many frames (64 MiB of 4 KiB pages) is started
/// again from the beginning once copied.
const RESTART_FRAMES: i64 = 16_384;

/// A catch-up pass that copied at most this many frames (1 MiB) was quick,
/// so few frames can have been appended during it: the RESTART follows.
const RESTART_LEFTOVER: i64 = 256;

/// At most this many catch-up passes before a RESTART: when appends outrun
/// the copies (or a reader holds frames back), the RESTART goes ahead.
const CATCH_UP_PASSES: usize = 8;

/// The longest a RESTART checkpoint waits for the writer or readers, and
/// so the longest it can hold appends back.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_millis(100);

/// Checkpoints on `pool` until the pool is closed, holding `writer` off
/// during RESTARTs; `file`, the database file, is synced after each copy
/// and before each RESTART.
pub(crate) fn spawn(pool: SqlitePool, writer: SqlitePool, file: DbFile) {
    tokio::spawn(async move {
        let mut seen = (0, 0);
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if pool.is_closed() || writer.is_closed() {
                return;
            }
            if let Err(e) = round(&pool, &writer, &file, RESTART_FRAMES, &mut seen).await {
                if pool.is_closed() || writer.is_closed() {
                    return;
                }
                tracing::warn!(error = %e, "sqlite: WAL checkpoint failed");
            }
        }
    });
}

/// One round: copy PASSIVE, then restart the WAL if it holds more than
/// `restart_frames`. `seen` is the WAL's (frames, copied) at the last
/// round, which tells whether this one copied anything.
async fn round(
    pool: &SqlitePool,
    writer: &SqlitePool,
    file: &DbFile,
    restart_frames: i64,
    seen: &mut (i64, i64),
) -> sqlx::Result<()> {
    let (_, wal_frames, copied) = checkpoint(pool, "PASSIVE").await?;
    // Synced every round that copied, not only before a RESTART: the
    // kernel would otherwise hold the copied pages until then and write
    // them in one burst (120-160 MiB under a full-speed producer), and the
    // commits that sync the WAL meanwhile waited 200-500 ms behind it.
    if (wal_frames, copied) != *seen {
        *seen = (wal_frames, copied);
        sync_file(file).await;
    }
    if wal_frames > restart_frames {
        let passes = catch_up(pool, file, copied).await?;
        let _writer_held = writer.acquire().await?;
        let held = std::time::Instant::now();
        let (busy, wal_frames, copied) = checkpoint(pool, "RESTART").await?;
        tracing::debug!(
            busy,
            wal_frames,
            copied,
            passes,
            held_ms = held.elapsed().as_millis() as u64,
            "sqlite: WAL restarted"
        );
        if busy != 0 {
            tracing::debug!(
                wal_frames,
                copied,
                "sqlite: WAL restart put off, a reader (or another process) was busy"
            );
        }
    }
    Ok(())
}

/// Copies and syncs, pass after pass, what was appended during the pass
/// before, without holding appends off, until a pass copies at most
/// [`RESTART_LEFTOVER`] frames or [`CATCH_UP_PASSES`] have run; `copied`
/// is what the WAL had copied before. Returns the passes run. The RESTART
/// after it then copies and syncs only what the last pass left, while the
/// writer waits: a fixed two passes left it 10-40 MiB under a full-speed
/// producer (~100 MB/s), and appends waited 20-180 ms behind it.
async fn catch_up(pool: &SqlitePool, file: &DbFile, mut copied: i64) -> sqlx::Result<usize> {
    for pass in 1..=CATCH_UP_PASSES {
        let (_, _, now_copied) = checkpoint(pool, "PASSIVE").await?;
        // A PASSIVE that did not copy everything leaves the database file
        // unsynced, and the RESTART's sync would then flush every page the
        // passes copied while appends wait.
        sync_file(file).await;
        if now_copied - copied <= RESTART_LEFTOVER {
            return Ok(pass);
        }
        copied = now_copied;
    }
    Ok(CATCH_UP_PASSES)
}

/// The database file, held open for the store's lifetime to sync it; `None`
/// for an in-memory database.
///
/// Opened once and never closed while SQLite uses the file: closing any
/// descriptor of a file drops every POSIX lock the process holds on it,
/// SQLite's included. Another process (`queen user add`, a backup) then
/// believes no one else has the database open, and when it closes its
/// own connection it checkpoints and deletes the WAL under this broker's
/// feet (seen as `disk I/O error`, code 522, when the file was opened
/// anew for every sync).
pub(crate) type DbFile = Option<Arc<std::fs::File>>;

/// Opens the database file at `path` for [`DbFile`].
pub(crate) fn open_db_file(path: &Path) -> DbFile {
    match std::fs::File::open(path) {
        Ok(file) => Some(Arc::new(file)),
        Err(e) => {
            tracing::debug!(error = %e, path = %path.display(), "sqlite: no database file to sync");
            None
        }
    }
}

/// Flushes what was written to `file` to the disk; a failure only leaves
/// that work to the RESTART, so it is logged, not returned.
async fn sync_file(file: &DbFile) {
    let Some(file) = file.clone() else {
        return;
    };
    let synced = tokio::task::spawn_blocking(move || file.sync_data()).await;
    match synced {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "sqlite: database file not synced"),
        Err(e) => tracing::debug!(error = %e, "sqlite: database file sync did not run"),
    }
}

/// Runs one checkpoint; returns SQLite's (busy, frames in the WAL, frames copied).
async fn checkpoint(pool: &SqlitePool, mode: &str) -> sqlx::Result<(i64, i64, i64)> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "PRAGMA wal_checkpoint({mode})"
    )))
    .fetch_one(pool)
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::sqlite::SqliteStore;

    /// A store on a fresh file, with a table `filler (b BLOB)` to write
    /// frames with; the directory lives as long as the returned guard.
    async fn store_with_filler() -> (tempfile::TempDir, std::path::PathBuf, SqliteStore) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("wal.db");
        let store = SqliteStore::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("open");
        sqlx::query("CREATE TABLE filler (b BLOB)")
            .execute(&store.writer)
            .await
            .expect("create");
        (dir, path, store)
    }

    /// With nothing appended meanwhile, catching up stops at the first pass
    /// that finds nothing new: after a 2 MiB commit, counted from nothing
    /// copied, the first pass finds it copied (by itself or by the store's
    /// own task) and the second finds nothing; a loop that never stopped
    /// would run all eight.
    #[tokio::test]
    async fn catching_up_stops_once_nothing_is_left() {
        let (_dir, path, store) = store_with_filler().await;
        sqlx::query("INSERT INTO filler (b) VALUES ($1)")
            .bind(vec![7u8; 2 * 1024 * 1024])
            .execute(&store.writer)
            .await
            .expect("insert");
        let passes = catch_up(&store.checkpointer, &open_db_file(&path), 0)
            .await
            .expect("catch up");
        assert!((1..=2).contains(&passes), "{passes} passes");
        store.close().await;
    }

    /// A steady stream of 256 KiB commits, 128 MiB in all, with a round
    /// every 20 ms that restarts a WAL past 1 MiB: the WAL file stays far
    /// below what was written. PASSIVE alone lets it grow with the stream.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_steady_write_stream_does_not_grow_the_wal() {
        let (dir, path, store) = store_with_filler().await;
        let done = Arc::new(AtomicBool::new(false));
        let checkpoints = {
            let (pool, writer, done, file) = (
                store.checkpointer.clone(),
                store.writer.clone(),
                done.clone(),
                open_db_file(&path),
            );
            tokio::spawn(async move {
                let mut seen = (0, 0);
                while !done.load(Ordering::Relaxed) {
                    round(&pool, &writer, &file, 256, &mut seen)
                        .await
                        .expect("checkpoint round");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };
        let blob = vec![7u8; 256 * 1024];
        let wal = dir.path().join("wal.db-wal");
        let mut largest = 0;
        for _ in 0..512 {
            let mut tx = store
                .writer()
                .begin_with("BEGIN IMMEDIATE")
                .await
                .expect("begin");
            sqlx::query("INSERT INTO filler (b) VALUES ($1)")
                .bind(&blob)
                .execute(&mut *tx)
                .await
                .expect("insert");
            tx.commit().await.expect("commit");
            sqlx::query("DELETE FROM filler")
                .execute(&store.writer)
                .await
                .expect("delete");
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        done.store(true, Ordering::Relaxed);
        checkpoints.await.expect("checkpoint task");
        store.close().await;
        assert!(
            largest < 32 * 1024 * 1024,
            "the WAL reached {largest} bytes for 128 MiB written"
        );
    }
}
