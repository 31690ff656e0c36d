//! The consumption statements on SQLite. The SQL is shared (see
//! `consume/sql.rs`); every write runs on the single writer connection
//! inside `BEGIN IMMEDIATE`, which serialises pops and acks.

use super::{SqliteStore, Tx};
use crate::consume::sql::consume_statements;

consume_statements!(SqliteStore, Tx, "");
