//! The KV statements on SQLite: the shared SQL, with versions drawn from the
//! one-row counter (moved inside the write transaction, which SQLite's single
//! writer already serialises, so no key lock is needed).

use super::{SqliteStore, Tx};
use crate::sql::kv_statements;

kv_statements!(
    SqliteStore,
    Tx,
    "",
    "UPDATE kv_version SET last = last + 1 RETURNING last",
    ""
);
