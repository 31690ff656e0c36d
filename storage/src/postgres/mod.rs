//! The PostgreSQL backend, for several brokers sharing one database. The
//! partition row is the per-partition serialiser: appends lock it with
//! `SELECT … FOR UPDATE`, so brokers never interleave inside a partition.

pub(crate) mod append;
pub(crate) mod notify;

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool};

use crate::error::Result;

/// How long a pooled connection may sit idle before it is checked again
/// before use.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub(crate) struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects to `url` and migrates the schema (sqlx holds an advisory
    /// lock meanwhile, so brokers starting together migrate once).
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(16)
            // sqlx pings a pooled connection before handing it out, a round
            // trip to the server for every statement run on the pool and
            // every transaction begun. A connection used within the last
            // second is handed out as it is; one idle longer is checked,
            // since the server or a proxy may have closed it meanwhile.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= STALE_AFTER {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            // A connection's socket buffers grow to the largest message it
            // carried (a group commit's segments, a page of segments read)
            // and kept that size, and the pool hands its connections out in
            // turn, so all sixteen held megabytes (20-30 MiB of a produce's
            // peak). Shrunk on release, they grow again per use: measured
            // at 5-12 % of produce throughput (README, Performance round 2).
            .after_release(|conn, _| {
                Box::pin(async move {
                    conn.shrink_buffers();
                    Ok(true)
                })
            })
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(Self { pool })
    }

    /// The pool every statement runs on.
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }
}
