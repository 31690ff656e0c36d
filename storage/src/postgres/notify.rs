//! What only PostgreSQL has for consumption: waking the long polls of the
//! other brokers with `NOTIFY`, listening for theirs, and the lease rows a
//! pop must find to skip the ones other brokers have locked.

use std::sync::{Arc, Weak};
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::mpsc;

use crate::consume::wake::{Wake, CHANNEL};
use crate::error::Result;
use crate::model::PartitionId;

/// See [`crate::backend::Store::create_lease_rows`]: each missing row in a
/// transaction of its own, so a pop then only locks rows that exist, and
/// skips the ones another broker has locked instead of waiting (and
/// deadlocking) on them.
pub(crate) async fn create_lease_rows(
    pool: &PgPool,
    partition_ids: &[PartitionId],
    group: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO consumer_leases (partition_id, consumer_group) \
         SELECT id, $2 FROM UNNEST($1::bigint[]) AS id ORDER BY id ON CONFLICT DO NOTHING",
    )
    .bind(partition_ids)
    .bind(group)
    .execute(pool)
    .await?;
    Ok(())
}

/// Starts the two tasks that share wake-ups with the other brokers: one
/// sends this broker's announcements, one listens for theirs. Both end when
/// the engine is dropped or the pool is closed.
pub(crate) fn start(pool: &PgPool, wake: &Arc<Wake>, kicks: mpsc::Receiver<()>) {
    tokio::spawn(announce(pool.clone(), Arc::downgrade(wake), kicks));
    tokio::spawn(listen(pool.clone(), Arc::downgrade(wake)));
}

/// After a round, the next waits this long: announcements made meanwhile
/// (a busy queue's every ack) go out together, in one `NOTIFY` round
/// instead of one each, for a wake-up at most this much later.
const ROUND_GAP: Duration = Duration::from_millis(5);

/// Sends every queue announced since the last round in one statement.
async fn announce(pool: PgPool, wake: Weak<Wake>, mut kicks: mpsc::Receiver<()>) {
    while kicks.recv().await.is_some() {
        let Some(queues) = wake.upgrade().map(|w| w.take_outbox()) else {
            return;
        };
        if queues.is_empty() || pool.is_closed() {
            continue;
        }
        let sent = sqlx::query("SELECT pg_notify($1, q) FROM UNNEST($2::text[]) AS q")
            .bind(CHANNEL)
            .bind(&queues)
            .execute(&pool)
            .await;
        if let Err(e) = sent {
            // Other brokers' waiting pops then find the work when they look
            // again (their timeout, or a lease expiry): slower, not wrong.
            tracing::warn!(error = %e, "could not announce new messages to other brokers");
        }
        tokio::time::sleep(ROUND_GAP).await;
    }
}

/// Wakes this broker's waiting pops on the other brokers' announcements.
async fn listen(pool: PgPool, wake: Weak<Wake>) {
    loop {
        if pool.is_closed() || wake.strong_count() == 0 {
            return;
        }
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for other brokers' messages; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(CHANNEL).await {
            tracing::warn!(error = %e, "LISTEN failed; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        loop {
            // A timeout lets the task notice a dropped engine or closed pool.
            let next = tokio::time::timeout(Duration::from_secs(5), listener.try_recv()).await;
            let Some(wake) = wake.upgrade() else { return };
            match next {
                Err(_) => {
                    if pool.is_closed() {
                        return;
                    }
                }
                Ok(Ok(Some(notification))) => wake.wake_local(notification.payload()),
                // The connection dropped: announcements may be lost, so
                // everyone looks again.
                Ok(Ok(None)) => wake.wake_all_local(),
                Ok(Err(e)) => {
                    wake.wake_all_local();
                    if pool.is_closed() {
                        return;
                    }
                    tracing::warn!(error = %e, "listening for other brokers failed; reconnecting");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    break;
                }
            }
        }
    }
}
