//! The PostgreSQL backend, for several brokers sharing one database. The
//! partition row is the per-partition serialiser: appends lock it with
//! `SELECT … FOR UPDATE`, so brokers never interleave inside a partition.

mod append;
mod consume;
mod kv;

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgConnection, PgPool, Postgres};

use crate::error::Result;
use crate::sql::{
    broker_statements, catalog_statements, log_statements, Backend, PartitionRow, QueueRow,
};
use crate::sql::{offset_statements, producer_statements};

/// A connection inside a transaction: every statement the engine runs in a
/// transaction (appends, pops and acks, KV) is implemented on this one type,
/// so a transaction of the HTTP API can run all of them together.
pub(crate) struct Tx<'c>(pub(crate) &'c mut PgConnection);

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub(crate) struct PgStore {
    pool: PgPool,
}

impl Backend for PgStore {
    type Db = Postgres;
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

    fn reader(&self) -> &PgPool {
        &self.pool
    }

    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }
}

catalog_statements!(PgStore, "FOR UPDATE");
crate::txn::transaction_statements!(PgStore, Tx);
log_statements!(PgStore);
broker_statements!(PgStore);
producer_statements!(PgStore);
offset_statements!(PgStore);
