//! What differs between SQLite and PostgreSQL, in one place.
//!
//! Every handle on the database comes in two kinds, one per backend, held in
//! one [`Db`] value: the connected [`Store`], the [`Reader`] pool reads go
//! to, a [`WriteTx`] and the [`Conn`] its statements run on. The statements
//! of each concern (`sql/<concern>.rs`) are written once and run on either
//! kind through [`on_db!`]; where the SQL itself must differ, it asks this
//! module by name ([`Conn::row_lock`], …) instead of taking string fragments.

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres, Sqlite, SqliteConnection, SqlitePool};

use std::sync::Arc;

use crate::append::{NewSegment, PartitionHead};
use crate::consume::wake::Wake;
use crate::dedup::run::{KeyedPage, Page};
use crate::dedup::HashRow;
use crate::error::{Result, StorageError};
use crate::metrics::{timed_acquire, Pool};
use crate::model::PartitionId;
use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;
use crate::stats::PoolStats;

/// One value per backend: the same thing, on SQLite or on PostgreSQL.
#[derive(Debug, Clone)]
pub(crate) enum Db<S, P> {
    /// The embedded backend.
    Sqlite(S),
    /// The shared backend.
    Postgres(P),
}

/// Runs the same code on whichever backend `$db` holds, with the inner
/// value bound to `$v`: the code is compiled once per backend, so every
/// statement in it is checked against both drivers.
macro_rules! on_db {
    ($db:expr, $v:ident => $body:expr) => {
        match $db {
            $crate::backend::Db::Sqlite($v) => $body,
            $crate::backend::Db::Postgres($v) => $body,
        }
    };
}

pub(crate) use on_db;

/// A connected database, chosen by its URL.
pub(crate) type Store = Db<SqliteStore, PgStore>;

/// The pool that reads go to (SQLite's read-only connections).
pub(crate) type Reader<'a> = Db<&'a SqlitePool, &'a PgPool>;

/// A write transaction. Dropped without [`WriteTx::commit`], it rolls back.
pub(crate) type WriteTx =
    Db<sqlx::Transaction<'static, Sqlite>, sqlx::Transaction<'static, Postgres>>;

/// A connection the statements of every concern run on: inside a write
/// transaction (so one transaction can combine appends, acks and KV), or a
/// reader's for reads of several statements.
pub(crate) type Conn<'c> = Db<&'c mut SqliteConnection, &'c mut PgConnection>;

/// A connection of the reader pool, held for a read of several statements.
pub(crate) type ReadConn = Db<PoolConnection<Sqlite>, PoolConnection<Postgres>>;

impl Store {
    /// Connects to `url` (`sqlite:` or `postgres:`) and applies the migrations.
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(Self::Postgres(PgStore::connect(url).await?))
        } else if url.starts_with("sqlite:") {
            Ok(Self::Sqlite(SqliteStore::connect(url).await?))
        } else {
            Err(StorageError::InvalidInput(format!(
                "unsupported database URL {url:?}: use sqlite:… or postgres://…"
            )))
        }
    }

    /// `"sqlite"` or `"postgres"`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// How many writer tasks suit this backend: SQLite has one writer.
    pub(crate) fn writer_shards(&self) -> usize {
        match self {
            Self::Sqlite(_) => 1,
            Self::Postgres(_) => 4,
        }
    }

    /// The pool reads go to.
    pub(crate) fn reader(&self) -> Reader<'_> {
        match self {
            Self::Sqlite(s) => Db::Sqlite(s.reader()),
            Self::Postgres(s) => Db::Postgres(s.pool()),
        }
    }

    /// A connection of the reader pool.
    pub(crate) async fn read_conn(&self) -> Result<ReadConn> {
        Ok(match self.reader() {
            Db::Sqlite(pool) => Db::Sqlite(timed_acquire(Pool::Reader, pool.acquire()).await?),
            Db::Postgres(pool) => {
                Db::Postgres(timed_acquire(Pool::Postgres, pool.acquire()).await?)
            }
        })
    }

    /// Begins a write transaction. On SQLite it takes the one write lock at
    /// once (`BEGIN IMMEDIATE`), so it never has to upgrade a read lock,
    /// which fails instead of waiting.
    /// The wait for the connection is measured apart from the `BEGIN`.
    pub(crate) async fn begin_write(&self) -> Result<WriteTx> {
        self.begin(true).await
    }

    /// Begins a write transaction whose commit need not wait for the disk:
    /// its commit returns before the WAL is flushed (it is visible to
    /// everyone at once; only a crash of the database itself, or on SQLite
    /// of the machine, may lose it, and any later durable commit makes it
    /// durable too). For writes whose loss is harmless, such as a pop's
    /// lease, which a crash only ends early.
    pub(crate) async fn begin_write_lazy(&self) -> Result<WriteTx> {
        self.begin(false).await
    }

    async fn begin(&self, durable: bool) -> Result<WriteTx> {
        Ok(match self {
            Self::Sqlite(s) => {
                let mut conn = timed_acquire(Pool::Writer, s.writer().acquire()).await?;
                s.set_durable(&mut conn, durable).await?;
                Db::Sqlite(
                    sqlx::Transaction::begin(
                        conn,
                        Some(sqlx::SqlSafeStr::into_sql_str("BEGIN IMMEDIATE")),
                    )
                    .await?,
                )
            }
            Self::Postgres(s) => {
                let conn = timed_acquire(Pool::Postgres, s.pool().acquire()).await?;
                // One round trip: the simple-query protocol runs both.
                let begin = (!durable).then(|| {
                    sqlx::SqlSafeStr::into_sql_str("BEGIN; SET LOCAL synchronous_commit = off")
                });
                Db::Postgres(sqlx::Transaction::begin(conn, begin).await?)
            }
        })
    }

    /// The connection pools with their state now.
    pub(crate) fn pools(&self) -> Vec<PoolStats> {
        fn stats<DB: sqlx::Database>(pool: Pool, p: &sqlx::Pool<DB>) -> PoolStats {
            let size = p.size();
            let idle = u32::try_from(p.num_idle()).unwrap_or(size);
            PoolStats {
                pool,
                max: p.options().get_max_connections(),
                open: size,
                in_use: size.saturating_sub(idle),
            }
        }
        match self {
            Self::Sqlite(s) => vec![
                stats(Pool::Writer, s.writer()),
                stats(Pool::Reader, s.reader()),
            ],
            Self::Postgres(s) => vec![stats(Pool::Postgres, s.pool())],
        }
    }

    /// The size of the database: SQLite's file (its pages, without the
    /// WAL), PostgreSQL's database. Both are catalog reads, not scans.
    pub(crate) async fn database_bytes(&self) -> Result<i64> {
        Ok(match self.reader() {
            Db::Sqlite(pool) => {
                sqlx::query_scalar(
                    "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                )
                .fetch_one(pool)
                .await?
            }
            Db::Postgres(pool) => {
                sqlx::query_scalar("SELECT pg_database_size(current_database())")
                    .fetch_one(pool)
                    .await?
            }
        })
    }

    /// Checks that the database answers.
    pub(crate) async fn ping(&self) -> Result<()> {
        on_db!(self.reader(), pool => {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    /// The wake-ups of an engine on this store: on PostgreSQL they are
    /// shared with the other brokers through `LISTEN`/`NOTIFY`.
    pub(crate) fn start_wake(&self) -> Arc<Wake> {
        match self {
            Self::Sqlite(_) => Wake::local(),
            Self::Postgres(s) => {
                let (wake, kicks) = Wake::shared();
                crate::postgres::notify::start(s.pool(), &wake, kicks);
                wake
            }
        }
    }

    /// Creates the missing lease rows of a group before a pop locks them.
    /// Only PostgreSQL needs them to exist, to skip rows another broker
    /// has locked ([`crate::sql::consume::claim`]); SQLite's claim creates them.
    pub(crate) async fn create_lease_rows(
        &self,
        partition_ids: &[PartitionId],
        group: &str,
    ) -> Result<()> {
        match self {
            Self::Sqlite(_) => Ok(()),
            Self::Postgres(s) => {
                crate::postgres::notify::create_lease_rows(s.pool(), partition_ids, group).await
            }
        }
    }

    /// Closes every connection.
    pub(crate) async fn close(&self) {
        on_db!(self, s => s.close().await)
    }
}

impl WriteTx {
    /// The connection the transaction's statements run on.
    pub(crate) fn conn(&mut self) -> Conn<'_> {
        match self {
            Self::Sqlite(tx) => Db::Sqlite(&mut **tx),
            Self::Postgres(tx) => Db::Postgres(&mut **tx),
        }
    }
}

impl ReadConn {
    /// The connection the reads run on.
    pub(crate) fn conn(&mut self) -> Conn<'_> {
        match self {
            Self::Sqlite(c) => Db::Sqlite(&mut **c),
            Self::Postgres(c) => Db::Postgres(&mut **c),
        }
    }
}

impl WriteTx {
    /// Commits the transaction.
    pub(crate) async fn commit(self) -> Result<()> {
        on_db!(self, tx => tx.commit().await?);
        Ok(())
    }

    /// Rolls the transaction back.
    pub(crate) async fn rollback(self) -> Result<()> {
        on_db!(self, tx => tx.rollback().await?);
        Ok(())
    }
}

impl Conn<'_> {
    /// The clause that locks the rows a `SELECT` reads until the
    /// transaction ends: PostgreSQL's `FOR UPDATE`; nothing on SQLite, whose
    /// single writer (`BEGIN IMMEDIATE`) already serialises every write
    /// transaction.
    pub(crate) fn row_lock(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "",
            Self::Postgres(_) => "FOR UPDATE",
        }
    }

    /// Locks the given partitions (ids ascending, so concurrent writers never
    /// deadlock) and returns the write state of those that exist. The
    /// partition row is the per-partition serialiser of appends: PostgreSQL
    /// locks the rows (`FOR UPDATE`), across brokers; on SQLite the write
    /// transaction already holds the one write lock.
    pub(crate) async fn lock_partitions(
        &mut self,
        ids: &[PartitionId],
    ) -> Result<Vec<PartitionHead>> {
        match self {
            Self::Sqlite(c) => crate::sqlite::append::lock_partitions(c, ids).await,
            Self::Postgres(c) => crate::postgres::append::lock_partitions(c, ids).await,
        }
    }

    /// Inserts an append's segments and sidecar rows and moves the partition
    /// heads forward, in a few bulk statements: arrays and `UNNEST` on
    /// PostgreSQL, multi-row `VALUES` on SQLite.
    pub(crate) async fn write_appends(
        &mut self,
        segments: Vec<NewSegment>,
        hashes: &[(PartitionId, HashRow)],
        heads: &[PartitionHead],
    ) -> Result<()> {
        match self {
            Self::Sqlite(c) => crate::sqlite::append::write(c, segments, hashes, heads).await,
            Self::Postgres(c) => crate::postgres::append::write(c, segments, hashes, heads).await,
        }
    }

    /// Inserts pages of dedup run `run_id` in one statement (a few on
    /// SQLite, for its parameter limit).
    pub(crate) async fn write_pages(&mut self, run_id: i64, pages: &[Page]) -> Result<()> {
        match self {
            Self::Sqlite(c) => crate::sqlite::append::write_pages(c, run_id, pages).await,
            Self::Postgres(c) => crate::postgres::append::write_pages(c, run_id, pages).await,
        }
    }

    /// Reads pages of dedup runs by (run id, page number), in one statement.
    pub(crate) async fn read_pages(&mut self, keys: &[(i64, i64)]) -> Result<Vec<KeyedPage>> {
        match self {
            Self::Sqlite(c) => crate::sqlite::append::read_pages(c, keys).await,
            Self::Postgres(c) => crate::postgres::append::read_pages(c, keys).await,
        }
    }

    /// The clause that lets a `SELECT … LIMIT` of a background sweep skip
    /// rows another broker's sweep has locked: `FOR UPDATE SKIP LOCKED` on
    /// PostgreSQL; nothing on SQLite, where sweeps never run concurrently.
    pub(crate) fn skip_locked(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "",
            Self::Postgres(_) => "FOR UPDATE SKIP LOCKED",
        }
    }

    /// Serialises the writers of one KV key (by its hash) until the
    /// transaction ends. A key that does not exist yet has no row to lock,
    /// so PostgreSQL takes a transaction-scoped advisory lock on the hash (a
    /// collision only serialises two keys that did not need it); SQLite's
    /// single writer already serialises every write.
    pub(crate) async fn lock_key(&mut self, hash: i64) -> Result<()> {
        if let Self::Postgres(c) = self {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(hash)
                .execute(&mut **c)
                .await?;
        }
        Ok(())
    }

    /// A KV version never issued before, not even after a rollback or a
    /// delete: PostgreSQL's sequence; on SQLite a one-row counter moved
    /// inside the write transaction, which the single writer serialises.
    pub(crate) async fn next_kv_version(&mut self) -> Result<i64> {
        Ok(match self {
            Self::Sqlite(c) => {
                sqlx::query_scalar("UPDATE kv_version SET last = last + 1 RETURNING last")
                    .fetch_one(&mut **c)
                    .await?
            }
            Self::Postgres(c) => {
                sqlx::query_scalar("SELECT nextval('kv_version_seq')")
                    .fetch_one(&mut **c)
                    .await?
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sqlx::Connection;
    use test_support::{Backend, TestDb};

    use super::*;

    /// Sessions of this database's connections that sit inside a
    /// transaction nobody is running: what a `BEGIN` cancelled after the
    /// server ran it leaves behind when nothing rolls it back. Polled for a
    /// while, since a dropped transaction's `ROLLBACK` goes out when its
    /// connection is returned to the pool, on a task of its own.
    async fn sessions_left_in_a_transaction(url: &str) -> i64 {
        let mut watcher = sqlx::PgConnection::connect(url).await.expect("watcher");
        let mut left = 0;
        for _ in 0..100 {
            left = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'",
            )
            .fetch_one(&mut watcher)
            .await
            .expect("pg_stat_activity");
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        left
    }

    /// On SQLite a lazy write commits without syncing the WAL (`NORMAL`),
    /// and every durable one after it syncs again (`FULL`).
    #[tokio::test]
    async fn sqlite_syncs_exactly_the_durable_writes() {
        let db = TestDb::new(Backend::Sqlite).await;
        let store = Store::connect(&db.url).await.expect("connect");
        for (durable, expected) in [(true, 2), (false, 1), (false, 1), (true, 2), (true, 2)] {
            let mut tx = match durable {
                true => store.begin_write().await,
                false => store.begin_write_lazy().await,
            }
            .expect("begin");
            let Db::Sqlite(c) = tx.conn() else {
                panic!("an SQLite store")
            };
            let mode: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut *c)
                .await
                .expect("synchronous");
            assert_eq!(mode, expected, "durable: {durable}");
            tx.commit().await.expect("commit");
        }
        store.close().await;
    }

    /// A write whose future is dropped anywhere in its `BEGIN` (a request
    /// its client gave up on, a task stopped at shutdown) leaves no pooled
    /// connection inside a transaction. sqlx 0.8 could: the next borrower's
    /// statements then ran inside it (PostgreSQL: holding its locks, and
    /// after the first error failing every statement with 25P02; SQLite:
    /// the single writer failing every `BEGIN`).
    #[tokio::test]
    async fn a_begin_cancelled_anywhere_leaves_no_connection_in_a_transaction() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let db = TestDb::new(backend).await;
            let store = Store::connect(&db.url).await.expect("connect");
            // Deadlines from nothing to 0.3 ms land before, during and after
            // the round trip of the BEGIN. (With sqlx 0.8.6 this left one
            // PostgreSQL session in a transaction, and the SQLite writer
            // stuck within 20 cancels.)
            for i in 0..3000u64 {
                let deadline = Duration::from_micros(i % 300);
                let begin = async {
                    if i % 2 == 0 {
                        store.begin_write().await
                    } else {
                        store.begin_write_lazy().await
                    }
                };
                let _ = tokio::time::timeout(deadline, begin).await;
            }
            let mut tx = tokio::time::timeout(Duration::from_secs(10), store.begin_write())
                .await
                .expect("a write begins after the cancelled ones")
                .expect("begin");
            for sql in [
                "CREATE TABLE written (x BIGINT)",
                "INSERT INTO written VALUES (1)",
            ] {
                on_db!(tx.conn(), c => sqlx::query(sql).execute(&mut *c).await.map(drop))
                    .expect(sql);
            }
            if let Db::Sqlite(c) = tx.conn() {
                let mode: i64 = sqlx::query_scalar("PRAGMA synchronous")
                    .fetch_one(&mut *c)
                    .await
                    .expect("synchronous");
                assert_eq!(
                    mode, 2,
                    "a durable write after cancelled lazy ones syncs (FULL)"
                );
            }
            tx.commit().await.expect("commit");
            if backend == Backend::Postgres {
                assert_eq!(
                    sessions_left_in_a_transaction(&db.url).await,
                    0,
                    "{backend:?}"
                );
            }
            let written: i64 = on_db!(store.reader(), pool => {
                sqlx::query_scalar("SELECT count(*) FROM written").fetch_one(pool).await
            })
            .expect("read back");
            assert_eq!(written, 1, "{backend:?}");
            store.close().await;
        }
    }
}
