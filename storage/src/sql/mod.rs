//! SQL that is the same on SQLite and PostgreSQL, written once.
//!
//! Each file holds a macro that expands, inside each backend module, to that
//! backend's methods for one concern: [`catalog`] (queues and partitions),
//! [`log`] (reading partitions back), [`brokers`] (the broker registry), [`kv`] (the key/value store).
//! Only the SQL that really differs (locking, bulk inserts, array
//! parameters) lives in the backends.

pub(crate) mod brokers;
pub(crate) mod catalog;
pub(crate) mod kv;
pub(crate) mod log;
pub(crate) mod offsets;
pub(crate) mod producers;

pub(crate) use brokers::broker_statements;
pub(crate) use catalog::{
    catalog_statements, partition_columns, queue_info, queue_infos, PartitionRow, QueueRow,
};
pub(crate) use kv::kv_statements;
pub(crate) use log::{log_statements, SEGMENT_COLUMNS};
pub(crate) use offsets::offset_statements;
pub(crate) use producers::producer_statements;

/// Ties a store type to its sqlx database, for the macros' signatures.
pub(crate) trait Backend {
    type Db: sqlx::Database;
}
