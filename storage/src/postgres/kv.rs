//! The KV statements on PostgreSQL: the shared SQL, plus what serialises a
//! key across brokers. A key that does not exist yet has no row to lock, so
//! writers take a transaction-scoped advisory lock on the key's hash
//! instead (in ascending hash order, so two writers never deadlock); a hash
//! collision only serialises two keys that did not need it. Versions come
//! from a sequence: never rolled back, never issued twice.

use super::{PgStore, Tx};
use crate::sql::kv_statements;

kv_statements!(
    PgStore,
    Tx,
    "SELECT pg_advisory_xact_lock($1)",
    "SELECT nextval('kv_version_seq')",
    "FOR UPDATE SKIP LOCKED"
);
