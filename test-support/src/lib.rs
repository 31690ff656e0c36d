//! Fresh databases for tests and benches, on SQLite or PostgreSQL.
//!
//! [`TestDb`] is a guard: a SQLite database lives in a temporary directory
//! removed on drop, and a PostgreSQL database (created on the server at
//! [`postgres_admin_url`]) is dropped with `DROP DATABASE … WITH (FORCE)` on
//! drop, so a test that panics leaks nothing either. A test that cannot
//! reach PostgreSQL fails with a message naming the URL, never skips.

#![warn(missing_docs)]

use std::time::Duration;

use sqlx::Connection;

/// The environment variable naming the PostgreSQL server the tests use.
pub const POSTGRES_URL_VAR: &str = "QUEEN_TEST_POSTGRES_URL";

/// The PostgreSQL server used when [`POSTGRES_URL_VAR`] is not set.
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// How long dropping a PostgreSQL database may take before it is given up
/// (and reported), so a hung server cannot hang the test run.
const DROP_TIMEOUT: Duration = Duration::from_secs(30);

/// The PostgreSQL server the tests create their databases on: an admin URL
/// (any database the user may connect to and create databases from).
pub fn postgres_admin_url() -> String {
    std::env::var(POSTGRES_URL_VAR).unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned())
}

/// Which backend a [`TestDb`] is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file in a temporary directory.
    Sqlite,
    /// A database of its own on the PostgreSQL server.
    Postgres,
}

/// A fresh, empty database and the URL to reach it; dropping it removes
/// the database (also when the test panics).
#[derive(Debug)]
pub struct TestDb {
    /// The database URL to hand to the engine or the broker.
    pub url: String,
    place: Place,
}

#[derive(Debug)]
enum Place {
    Sqlite { _dir: tempfile::TempDir },
    Postgres { admin: String, name: String },
}

impl TestDb {
    /// A fresh database on `backend`.
    pub async fn new(backend: Backend) -> Self {
        match backend {
            Backend::Sqlite => Self::sqlite(),
            Backend::Postgres => Self::postgres().await,
        }
    }

    /// A fresh SQLite database: a file in a new temporary directory.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory for the SQLite test database");
        Self {
            url: format!("sqlite://{}", dir.path().join("queen.db").display()),
            place: Place::Sqlite { _dir: dir },
        }
    }

    /// A fresh PostgreSQL database on the server at [`postgres_admin_url`].
    ///
    /// # Panics
    ///
    /// When the server cannot be reached or refuses to create the database:
    /// the PostgreSQL tests need it and fail rather than skip.
    pub async fn postgres() -> Self {
        let admin = postgres_admin_url();
        let name = format!("queen_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .unwrap_or_else(|e| {
                panic!("PostgreSQL is required at {admin} ({POSTGRES_URL_VAR}): {e}")
            });
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("cannot create test database {name} at {admin}: {e}"));
        // Best effort: the database exists either way, and Drop removes it.
        let _ = conn.close().await;
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
        Self {
            url: format!("{base}/{name}"),
            place: Place::Postgres { admin, name },
        }
    }

    /// The backend this database is on.
    pub fn backend(&self) -> Backend {
        match self.place {
            Place::Sqlite { .. } => Backend::Sqlite,
            Place::Postgres { .. } => Backend::Postgres,
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // SQLite: the TempDir field removes its directory by itself.
        if let Place::Postgres { admin, name } = &self.place {
            drop_postgres(admin, name);
        }
    }
}

/// Drops database `name` on the server at `admin`, ending its connections.
///
/// Drop is synchronous and may run inside a tokio runtime (whose thread
/// must not block on it) or outside one, so the work runs on a thread of
/// its own with a small runtime of its own, joined here. Failures are
/// reported on stderr: a panic in Drop during a test's panic would abort.
fn drop_postgres(admin: &str, name: &str) {
    let (admin, owned_name) = (admin.to_owned(), name.to_owned());
    let thread = std::thread::Builder::new()
        .name(format!("drop {name}"))
        .spawn(move || -> Result<(), String> {
            let name = owned_name;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("no runtime: {e}"))?;
            runtime.block_on(async {
                let drop_it = async {
                    let mut conn = sqlx::PgConnection::connect(&admin).await?;
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                    )))
                    .execute(&mut conn)
                    .await?;
                    conn.close().await
                };
                match tokio::time::timeout(DROP_TIMEOUT, drop_it).await {
                    Ok(result) => result.map_err(|e| e.to_string()),
                    Err(_) => Err(format!("no answer within {DROP_TIMEOUT:?}")),
                }
            })
        });
    let outcome = match thread {
        Ok(handle) => handle
            .join()
            .unwrap_or_else(|_| Err("the dropping thread panicked".to_owned())),
        Err(e) => Err(format!("cannot start the dropping thread: {e}")),
    };
    if let Err(e) = outcome {
        eprintln!("test-support: could not drop test database {name}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use super::*;

    /// Whether database `name` exists on the test server.
    async fn exists(name: &str) -> bool {
        let mut conn = sqlx::PgConnection::connect(&postgres_admin_url())
            .await
            .expect("admin connection");
        let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM pg_database WHERE datname = $1")
            .bind(name)
            .fetch_one(&mut conn)
            .await
            .expect("pg_database");
        n == 1
    }

    fn name_of(db: &TestDb) -> String {
        db.url
            .rsplit('/')
            .next()
            .expect("a database name")
            .to_owned()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_postgres_database_goes_with_its_guard() {
        let db = TestDb::postgres().await;
        let name = name_of(&db);
        assert_eq!(db.backend(), Backend::Postgres);
        assert!(exists(&name).await, "{name} was created");
        let mut conn = sqlx::PgConnection::connect(&db.url)
            .await
            .expect("a connection left open");
        sqlx::query("SELECT 1")
            .execute(&mut conn)
            .await
            .expect("query");
        drop(db);
        assert!(!exists(&name).await, "{name} is dropped");
    }

    #[tokio::test]
    async fn a_postgres_database_goes_when_the_test_panics() {
        let db = TestDb::postgres().await;
        let name = name_of(&db);
        let panicked = catch_unwind(AssertUnwindSafe(move || {
            let _db = db;
            panic!("deliberate");
        }));
        assert!(panicked.is_err());
        assert!(!exists(&name).await, "{name} is dropped");
    }

    #[test]
    fn a_sqlite_directory_goes_with_its_guard() {
        let db = TestDb::sqlite();
        assert_eq!(db.backend(), Backend::Sqlite);
        let path = db.url.strip_prefix("sqlite://").expect("a sqlite URL");
        let dir = std::path::Path::new(path)
            .parent()
            .expect("a directory")
            .to_owned();
        assert!(dir.is_dir());
        drop(db);
        assert!(!dir.exists());
    }
}
