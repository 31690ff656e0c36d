//! The PostgreSQL backend, for several brokers sharing one database. The
//! partition row is the per-partition serialiser: appends lock it with
//! `SELECT … FOR UPDATE`, so brokers never interleave inside a partition.

pub(crate) mod append;
mod consume;

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgConnection, PgPool, Postgres};

use crate::backend::{AsConn, Conn, Db};
use crate::error::Result;

/// A connection inside a transaction: every statement the engine runs in a
/// transaction (appends, pops and acks, KV) is implemented on this one type,
/// so a transaction of the HTTP API can run all of them together.
pub(crate) struct Tx<'c>(pub(crate) &'c mut PgConnection);

impl AsConn for Tx<'_> {
    fn conn(&mut self) -> Conn<'_> {
        Db::Postgres(&mut *self.0)
    }
}

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

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Postgres>> {
        Ok(self.pool.begin().await?)
    }

    /// The pool every statement runs on.
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    fn reader(&self) -> &PgPool {
        &self.pool
    }

    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }
}

crate::txn::transaction_statements!(PgStore, Tx);
