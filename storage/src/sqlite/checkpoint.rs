//! WAL checkpoints off the commit path.
//!
//! SQLite's automatic checkpoint runs inside the commit that takes the WAL
//! past 1,000 pages: every few large appends, one commit also copies the
//! WAL into the database file and syncs it (~10 ms on the development
//! machine instead of ~2), and everything queued behind the single writer
//! waits, which a producer with one request in flight (librdkafka with
//! idempotence) feels directly. So the writer connection does not
//! checkpoint; this task does, PASSIVE, on a connection of its own (its own
//! thread), beside the writer. Once the WAL is copied, the writer's next
//! transaction starts it again from the beginning, so it does not grow.

use std::time::Duration;

use sqlx::SqlitePool;

/// How often the WAL is copied into the database.
const EVERY: Duration = Duration::from_secs(1);

/// Checkpoints on `pool` until the pool is closed.
pub(crate) fn spawn(pool: SqlitePool) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if pool.is_closed() {
                return;
            }
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&pool)
                .await
            {
                if pool.is_closed() {
                    return;
                }
                tracing::warn!(error = %e, "sqlite: WAL checkpoint failed");
            }
        }
    });
}
