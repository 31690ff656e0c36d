//! The broker registry: which brokers share this database, and the cluster id.

use crate::backend::{on_db, Store};
use crate::error::Result;
use crate::model::BrokerInfo;

/// Registers (or re-registers) the broker advertised at `host:port`;
/// returns its id, stable across restarts.
pub(crate) async fn register(store: &Store, host: &str, port: i32, now_ms: i64) -> Result<i32> {
    let mut tx = store.begin_write().await?;
    let id = on_db!(tx.conn(), c => sqlx::query_scalar(
        "INSERT INTO brokers (host, port, heartbeat_at) VALUES ($1, $2, $3) \
         ON CONFLICT (host, port) DO UPDATE SET heartbeat_at = excluded.heartbeat_at \
         RETURNING id",
    )
    .bind(host)
    .bind(port)
    .bind(now_ms)
    .fetch_one(c)
    .await?);
    tx.commit().await?;
    Ok(id)
}

/// Records `at_ms` as broker `id`'s last heartbeat (0: it has left).
pub(crate) async fn set_heartbeat(store: &Store, id: i32, at_ms: i64) -> Result<()> {
    let mut tx = store.begin_write().await?;
    on_db!(tx.conn(), c => {
        sqlx::query("UPDATE brokers SET heartbeat_at = $1 WHERE id = $2")
            .bind(at_ms)
            .bind(id)
            .execute(c)
            .await?;
    });
    tx.commit().await
}

/// The brokers whose last heartbeat is at or after `since_ms`, by id.
pub(crate) async fn live(store: &Store, since_ms: i64) -> Result<Vec<BrokerInfo>> {
    Ok(on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT id, host, port FROM brokers WHERE heartbeat_at >= $1 ORDER BY id",
    )
    .bind(since_ms)
    .fetch_all(pool)
    .await?))
}

/// Replaces broker `id`'s listeners with `listeners` (name, host, port).
pub(crate) async fn register_listeners(
    store: &Store,
    id: i32,
    listeners: &[(String, String, i32)],
) -> Result<()> {
    let mut tx = store.begin_write().await?;
    on_db!(tx.conn(), c => {
        sqlx::query("DELETE FROM broker_listeners WHERE broker_id = $1")
            .bind(id)
            .execute(&mut *c)
            .await?;
        for (name, host, port) in listeners {
            sqlx::query(
                "INSERT INTO broker_listeners (broker_id, listener, host, port) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(id)
            .bind(name)
            .bind(host)
            .bind(port)
            .execute(&mut *c)
            .await?;
        }
    });
    tx.commit().await
}

/// The live brokers with their address on `listener` (their registered
/// address when they have no such listener), by id.
pub(crate) async fn live_on(
    store: &Store,
    since_ms: i64,
    listener: &str,
) -> Result<Vec<BrokerInfo>> {
    Ok(on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT b.id, COALESCE(l.host, b.host) AS host, COALESCE(l.port, b.port) AS port \
         FROM brokers b LEFT JOIN broker_listeners l \
         ON l.broker_id = b.id AND l.listener = $2 \
         WHERE b.heartbeat_at >= $1 ORDER BY b.id",
    )
    .bind(since_ms)
    .bind(listener)
    .fetch_all(pool)
    .await?))
}

/// The cluster id, minted by the first broker that asks.
pub(crate) async fn cluster_id(store: &Store) -> Result<String> {
    let mut tx = store.begin_write().await?;
    let id = on_db!(tx.conn(), c => {
        sqlx::query("INSERT INTO cluster (id, cluster_id) VALUES (1, $1) ON CONFLICT (id) DO NOTHING")
            .bind(new_cluster_id())
            .execute(&mut *c)
            .await?;
        sqlx::query_scalar("SELECT cluster_id FROM cluster WHERE id = 1")
            .fetch_one(c)
            .await?
    });
    tx.commit().await?;
    Ok(id)
}

/// A Kafka-style cluster id: 22 characters of URL-safe base64 of a random UUID.
fn new_cluster_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bits = uuid::Uuid::new_v4().as_u128();
    (0..22)
        .map(|i| ALPHABET[((bits >> (i * 6)) & 63) as usize] as char)
        .collect()
}
