//! A fresh database per test, on either backend, with a test clock.

use std::sync::Arc;

use sqlx::Connection;
use storage::sealing::{Keyring, PayloadKey};
use storage::{Clock, Engine, ManualClock};
use test_support::{Backend, TestDb};

/// A fresh, empty database, the URL to reach it and the clock its engines
/// run on; the database goes when this does (also when the test panics).
pub(crate) struct Db {
    pub url: String,
    pub clock: ManualClock,
    db: TestDb,
}

/// The time every test starts at: a fixed, plausible instant.
pub(crate) const START_MS: i64 = 1_790_000_000_000;

impl Db {
    pub(crate) fn sqlite() -> Self {
        Self::on(TestDb::sqlite())
    }

    pub(crate) async fn postgres() -> Self {
        Self::on(TestDb::postgres().await)
    }

    fn on(db: TestDb) -> Self {
        Self {
            url: db.url.clone(),
            clock: ManualClock::new(START_MS),
            db,
        }
    }

    /// The test clock's current time, ms since the epoch.
    pub(crate) fn clock_now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// An engine on this database, on the test's clock. Call it twice for
    /// two brokers sharing the database.
    pub(crate) async fn engine(&self) -> Engine {
        self.engine_with_key(None).await
    }

    /// An engine as [`Db::engine`], sealing encrypted queues with `key`.
    pub(crate) async fn engine_with_key(&self, key: Option<&PayloadKey>) -> Engine {
        self.engine_with_keys(&Keyring::new(key.cloned(), Vec::new()))
            .await
    }

    /// An engine as [`Db::engine`], with the keys of `keys`.
    pub(crate) async fn engine_with_keys(&self, keys: &Keyring) -> Engine {
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        Engine::open(&self.url, clock, keys)
            .await
            .expect("engine connects")
    }

    /// Every value of the one blob column a raw SQL query selects.
    pub(crate) async fn blobs(&self, sql: &str) -> Vec<Vec<u8>> {
        let rows = match self.db.backend() {
            Backend::Sqlite => {
                let mut conn = sqlx::SqliteConnection::connect(&self.url).await;
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .fetch_all(conn.as_mut().expect("raw connection"))
                    .await
            }
            Backend::Postgres => {
                let mut conn = sqlx::PgConnection::connect(&self.url).await;
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .fetch_all(conn.as_mut().expect("raw connection"))
                    .await
            }
        };
        rows.expect("raw sql")
    }

    /// Runs raw SQL against the database, to simulate what other parts of
    /// the system (retention) do.
    pub(crate) async fn execute(&self, sql: &str) {
        self.raw(sql).await;
    }

    /// The single integer a raw SQL query answers (a count, say).
    pub(crate) async fn count(&self, sql: &str) -> i64 {
        self.raw(sql).await.expect("the query answers a row")
    }

    /// Runs raw SQL; the first column of its first row, if it answers one.
    async fn raw(&self, sql: &str) -> Option<i64> {
        let answer = match self.db.backend() {
            Backend::Sqlite => {
                let mut conn = sqlx::SqliteConnection::connect(&self.url).await;
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .fetch_optional(conn.as_mut().expect("raw connection"))
                    .await
            }
            Backend::Postgres => {
                let mut conn = sqlx::PgConnection::connect(&self.url).await;
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .fetch_optional(conn.as_mut().expect("raw connection"))
                    .await
            }
        };
        answer.expect("raw sql")
    }
}

/// [`Engine::read_partition`] with its records decoded, which is what
/// assertions compare.
pub(crate) async fn read_messages(
    engine: &Engine,
    partition: storage::PartitionId,
    from: i64,
    max_messages: usize,
    max_bytes: usize,
) -> storage::Result<Vec<storage::StoredMessage>> {
    let stored = engine
        .read_partition(partition, from, max_messages, max_bytes)
        .await?;
    stored.iter().flat_map(|s| s.decode()).collect()
}
