//! The broker registry: which brokers share this database, and the cluster id.

/// Expands to the registry methods of a store type with `begin_write()` and `reader()`.
macro_rules! broker_statements {
    ($store:ty) => {
        impl $store {
            /// Registers (or re-registers) the broker advertised at
            /// `host:port`; returns its id, stable across restarts.
            pub(crate) async fn register_broker(
                &self,
                host: &str,
                port: i32,
                now_ms: i64,
            ) -> $crate::error::Result<i32> {
                let mut tx = self.begin_write().await?;
                let (id,): (i32,) = sqlx::query_as(
                    "INSERT INTO brokers (host, port, heartbeat_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (host, port) DO UPDATE SET heartbeat_at = excluded.heartbeat_at \
                     RETURNING id",
                )
                .bind(host)
                .bind(port)
                .bind(now_ms)
                .fetch_one(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(id)
            }

            /// Records that the broker is alive.
            pub(crate) async fn broker_heartbeat(&self, id: i32, now_ms: i64) -> $crate::error::Result<()> {
                let mut tx = self.begin_write().await?;
                sqlx::query("UPDATE brokers SET heartbeat_at = $1 WHERE id = $2")
                    .bind(now_ms)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }

            /// The brokers whose last heartbeat is at or after `since_ms`, by id.
            pub(crate) async fn live_brokers(
                &self,
                since_ms: i64,
            ) -> $crate::error::Result<Vec<$crate::model::BrokerInfo>> {
                let rows: Vec<(i32, String, i32)> = sqlx::query_as(
                    "SELECT id, host, port FROM brokers WHERE heartbeat_at >= $1 ORDER BY id",
                )
                .bind(since_ms)
                .fetch_all(self.reader())
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(id, host, port)| $crate::model::BrokerInfo { id, host, port })
                    .collect())
            }

            /// The cluster id, minted by the first broker that asks.
            pub(crate) async fn cluster_id(&self) -> $crate::error::Result<String> {
                let mut tx = self.begin_write().await?;
                sqlx::query("INSERT INTO cluster (id, cluster_id) VALUES (1, $1) ON CONFLICT (id) DO NOTHING")
                    .bind($crate::sql::brokers::new_cluster_id())
                    .execute(&mut *tx)
                    .await?;
                let (id,): (String,) = sqlx::query_as("SELECT cluster_id FROM cluster WHERE id = 1")
                    .fetch_one(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(id)
            }
        }
    };
}

pub(crate) use broker_statements;

/// A Kafka-style cluster id: 22 characters of URL-safe base64 of a random UUID.
pub(crate) fn new_cluster_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bits = uuid::Uuid::new_v4().as_u128();
    (0..22)
        .map(|i| ALPHABET[((bits >> (i * 6)) & 63) as usize] as char)
        .collect()
}
