//! The consumption statements on SQLite. The SQL is shared (see
//! `consume/sql.rs`); every write runs on the single writer connection
//! inside `BEGIN IMMEDIATE`, which serialises pops and acks.

use sqlx::SqliteConnection;

use super::SqliteStore;
use crate::consume::sql::consume_statements;

/// The pop and ack statements inside a write transaction.
pub(crate) struct Tx<'c>(pub(crate) &'c mut SqliteConnection);

consume_statements!(SqliteStore, Tx, "");
