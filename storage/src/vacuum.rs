//! Giving deleted rows' space back on PostgreSQL when the server does not.
//!
//! PostgreSQL reuses the space of deleted rows only once VACUUM has passed.
//! Autovacuum does that where it is on; on a server where it is off (this
//! project's CI runs one), the tables the broker deletes from in bulk —
//! segments (retention, compaction), run pages (dedup merges), sidecar rows
//! (dedup purge) — would grow without bound. So each background task counts
//! the rows it deleted, and once a table's count reaches a fifth of its
//! live rows (at least [`MIN_ROWS`]) the task vacuums it. SQLite reuses
//! freed pages by itself.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::{Db, Reader};
use crate::error::Result;

/// Fewer deleted rows than this are never worth a vacuum.
const MIN_ROWS: u64 = 10_000;

/// A table the broker deletes from in bulk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Segments,
    DedupPages,
    TxnHashes,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Self::Segments => "segments",
            Self::DedupPages => "dedup_pages",
            Self::TxnHashes => "txn_hashes",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Rows deleted per table since its last vacuum by this broker.
#[derive(Debug, Default)]
pub(crate) struct Debt([AtomicU64; 3]);

impl Debt {
    /// Counts `rows` deleted from `table`.
    pub(crate) fn add(&self, table: Table, rows: u64) {
        self.0[table.index()].fetch_add(rows, Ordering::Relaxed);
    }

    /// Vacuums `table` if its debt is due and the server does not
    /// autovacuum; answers whether it did.
    pub(crate) async fn settle(&self, db: Reader<'_>, table: Table) -> Result<bool> {
        let Db::Postgres(pool) = db else {
            return Ok(false);
        };
        let owed = self.0[table.index()].load(Ordering::Relaxed);
        if owed < MIN_ROWS {
            return Ok(false);
        }
        let (autovacuum, live): (String, f32) = sqlx::query_as(
            "SELECT current_setting('autovacuum'), reltuples FROM pg_class WHERE oid = $1::regclass",
        )
        .bind(table.name())
        .fetch_one(pool)
        .await?;
        if autovacuum == "on" || owed < (live.max(0.0) as u64 / 5).max(MIN_ROWS) {
            return Ok(false);
        }
        // Outside a transaction, as VACUUM must be; it takes no lock that
        // holds appends or reads back.
        sqlx::query(sqlx::AssertSqlSafe(format!("VACUUM {}", table.name())))
            .execute(pool)
            .await?;
        self.0[table.index()].store(0, Ordering::Relaxed);
        Ok(true)
    }
}
