//! A fresh database per test, on either backend.

use std::sync::Arc;

use sqlx::Connection;
use storage::{Clock, Engine, ManualClock};

/// The PostgreSQL server the tests create their databases on.
pub fn postgres_admin_url() -> String {
    std::env::var("QUEEN_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// A fresh, empty database and the URL to reach it.
pub struct Db {
    pub url: String,
    pub clock: ManualClock,
    _dir: Option<tempfile::TempDir>,
    pg_name: Option<String>,
}

/// The time every test starts at: a fixed, plausible instant.
pub const START_MS: i64 = 1_790_000_000_000;

impl Db {
    pub async fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("queen.db").display());
        Self {
            url,
            clock: ManualClock::new(START_MS),
            _dir: Some(dir),
            pg_name: None,
        }
    }

    pub async fn postgres() -> Self {
        let admin = postgres_admin_url();
        let name = format!("queen_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .unwrap_or_else(|e| {
                panic!("PostgreSQL is required at {admin} (QUEEN_TEST_POSTGRES_URL): {e}")
            });
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
        Self {
            url: format!("{base}/{name}"),
            clock: ManualClock::new(START_MS),
            _dir: None,
            pg_name: Some(name),
        }
    }

    /// The test clock's current time, ms since the epoch.
    pub fn clock_now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// An engine on this database, on the test's clock. Call it twice for
    /// two brokers sharing the database.
    pub async fn engine(&self) -> Engine {
        let clock: Arc<dyn Clock> = Arc::new(self.clock.clone());
        Engine::connect_with_clock(&self.url, clock)
            .await
            .expect("engine connects")
    }

    /// Runs raw SQL against the database, to simulate what other parts of
    /// the system (retention) do.
    pub async fn execute(&self, sql: &str) {
        let mut conn = sqlx::AnyConnection::connect(&self.url)
            .await
            .expect("raw connection");
        sqlx::query(sql).execute(&mut conn).await.expect("raw sql");
    }

    /// Drops the PostgreSQL database (SQLite's directory goes by itself).
    pub async fn drop_db(self) {
        if let Some(name) = &self.pg_name {
            let mut conn = sqlx::PgConnection::connect(&postgres_admin_url())
                .await
                .expect("admin connection");
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut conn)
                .await
                .expect("drop test database");
        }
    }
}
