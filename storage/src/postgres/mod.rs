//! The PostgreSQL backend, for several brokers sharing one database. The
//! partition row is the per-partition serialiser: appends lock it with
//! `SELECT … FOR UPDATE`, so brokers never interleave inside a partition.

pub(crate) mod append;
pub(crate) mod notify;

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use crate::error::Result;

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
