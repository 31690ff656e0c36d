//! The embedded SQLite backend: one writer connection (SQLite has one writer
//! anyway) and a pool of readers, in WAL mode.

pub(crate) mod append;
mod checkpoint;

use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{SqliteConnection, SqlitePool};

use crate::error::Result;

/// The SQLite store.
#[derive(Debug, Clone)]
pub(crate) struct SqliteStore {
    writer: SqlitePool,
    reader: SqlitePool,
    /// The connection WAL checkpoints run on ([`checkpoint`]).
    checkpointer: SqlitePool,
    /// The database file, which the checkpoints sync; dropped with the
    /// last clone of the store, after its connections are closed.
    _file: checkpoint::DbFile,
    /// The writer connection's synchronous mode ([`SyncMode`]).
    sync_mode: Arc<AtomicU8>,
}

/// What is known of the writer connection's `synchronous` pragma: `FULL`
/// (every commit syncs the WAL) unless a transaction whose loss is harmless
/// asked for `NORMAL` ([`SqliteStore::set_durable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum SyncMode {
    Full = 0,
    /// A switch was begun and may not have happened: the next durable
    /// transaction sets `FULL` again.
    Unknown = 1,
    Normal = 2,
}

impl SqliteStore {
    /// Opens (creating if missing) the database file of `url` and migrates it.
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a commit survives power loss, not only a process crash.
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(30))
            // 2 MiB: the writer's pages are mostly a segment's new overflow
            // pages, written once; 8 MiB only held more of them, no faster
            // (`cargo bench --bench push`).
            .pragma("cache_size", "-2048");
        if let Some(dir) = options.get_filename().parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    crate::StorageError::InvalidInput(format!(
                        "cannot create the database directory {}: {e}",
                        dir.display()
                    ))
                })?;
            }
        }
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            // An embedded connection does not go stale; pinging it before
            // every use only adds a round trip to its thread (so for the
            // checkpointer and the readers too).
            .test_before_acquire(false)
            .connect_with(options.clone().pragma("wal_autocheckpoint", "0"))
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&writer).await?;
        let checkpointer = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect_with(
                options
                    .clone()
                    .pragma("wal_autocheckpoint", "0")
                    .busy_timeout(checkpoint::BUSY_TIMEOUT),
            )
            .await?;
        let file = checkpoint::open_db_file(options.get_filename());
        checkpoint::spawn(checkpointer.clone(), writer.clone(), file.clone());
        let reader = SqlitePoolOptions::new()
            .max_connections(reader_count())
            .test_before_acquire(false)
            // Every commit of the writer empties a reader's page cache (WAL
            // mode), so under appends a reader's cache mostly holds pages no
            // one reads again (a segment's overflow pages, read once): 512
            // KiB keeps the b-trees' upper pages, and the readers' caches
            // (four at most) do not add up to what a consume's buffers hold.
            .connect_with(options.read_only(true).pragma("cache_size", "-512"))
            .await?;
        Ok(Self {
            writer,
            reader,
            checkpointer,
            _file: file,
            sync_mode: Arc::new(AtomicU8::new(SyncMode::Full as u8)),
        })
    }

    /// Readies the writer connection, before its `BEGIN`, for a transaction
    /// that is `durable` (its commit syncs the WAL: `FULL`) or not
    /// (`NORMAL`: it survives a crash of the process, not of the machine,
    /// unless a durable commit follows, whose sync takes every frame written
    /// before it). For writes whose loss is harmless, as on PostgreSQL with
    /// `synchronous_commit = off`: a pop's lease, the dedup upkeep's steps,
    /// a merge's pages before it is published. WAL mode stays consistent
    /// either way: a crash loses the newest transactions, never one before
    /// another. Switching costs a statement, only when the mode changes.
    pub(crate) async fn set_durable(
        &self,
        conn: &mut SqliteConnection,
        durable: bool,
    ) -> Result<()> {
        let mode = self.sync_mode.load(Ordering::Acquire);
        match durable {
            true if mode != SyncMode::Full as u8 => {
                sqlx::query("PRAGMA synchronous = FULL")
                    .execute(&mut *conn)
                    .await?;
                self.sync_mode
                    .store(SyncMode::Full as u8, Ordering::Release);
            }
            false if mode != SyncMode::Normal as u8 => {
                // Unknown first: cancelled during the statement, the switch
                // is undone by the next durable transaction.
                self.sync_mode
                    .store(SyncMode::Unknown as u8, Ordering::Release);
                sqlx::query("PRAGMA synchronous = NORMAL")
                    .execute(&mut *conn)
                    .await?;
                self.sync_mode
                    .store(SyncMode::Normal as u8, Ordering::Release);
            }
            _ => {}
        }
        Ok(())
    }

    /// The one writer connection.
    pub(crate) fn writer(&self) -> &SqlitePool {
        &self.writer
    }

    /// The read-only connections.
    pub(crate) fn reader(&self) -> &SqlitePool {
        &self.reader
    }

    pub(crate) async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
        // Last: the last connection to close copies what is left of the WAL.
        self.checkpointer.close().await;
    }
}

/// How many read-only connections to open: one per core, at least two (so
/// one long scan, such as a compaction's, never holds every reader) and at
/// most four. Each is a thread of its own, and the pool hands its idle
/// connections out in turn, so each reader's thread keeps an allocator
/// arena of the megabyte segments it read: readers beyond the cores only
/// add that memory, not speed (SQLite's reads here are CPU-bound, from the
/// page cache).
fn reader_count() -> u32 {
    std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 4) as u32)
}
