//! The KV statements, the same on SQLite and PostgreSQL.

/// Expands to `impl KvTx for $tx` and to the sweep of `$store`.
/// `$lock_key` locks one key hash until commit (`""` where the single writer
/// serialises every write anyway); `$next_version` draws a fresh version;
/// `$skip_locked` lets concurrent sweeps of several brokers pass each other.
macro_rules! kv_statements {
    ($store:ty, $tx:ident, $lock_key:literal, $next_version:literal, $skip_locked:literal) => {
        impl $crate::kv::KvTx for $tx<'_> {
            async fn lock_keys(&mut self, hashes: &[i64]) -> $crate::error::Result<()> {
                if $lock_key.is_empty() {
                    return Ok(());
                }
                for hash in hashes {
                    sqlx::query($lock_key)
                        .bind(hash)
                        .execute(&mut *self.0)
                        .await?;
                }
                Ok(())
            }

            async fn kv_get(
                &mut self,
                ns: &str,
                key: &str,
                now: i64,
            ) -> $crate::error::Result<Option<$crate::kv::KvRow>> {
                let row: Option<(String, i64, Option<i64>, i64)> = sqlx::query_as(
                    "SELECT value, version, expires_at, updated_at FROM kv \
                     WHERE ns = $1 AND kv_key = $2 AND (expires_at IS NULL OR expires_at > $3)",
                )
                .bind(ns)
                .bind(key)
                .bind(now)
                .fetch_optional(&mut *self.0)
                .await?;
                Ok(row.map(|(value, version, expires_at, updated_at)| $crate::kv::KvRow {
                    key: key.to_owned(),
                    value,
                    version,
                    expires_at,
                    updated_at,
                }))
            }

            async fn kv_prefix(
                &mut self,
                ns: &str,
                prefix: &str,
                after: Option<&str>,
                limit: i64,
                now: i64,
            ) -> $crate::error::Result<Vec<$crate::kv::KvRow>> {
                // `kv_key >= prefix` bounds the range scan; the substr test
                // ends it at the first key without the prefix.
                let rows: Vec<(String, String, i64, Option<i64>, i64)> = sqlx::query_as(
                    "SELECT kv_key, value, version, expires_at, updated_at FROM kv \
                     WHERE ns = $1 AND kv_key >= $2 AND substr(kv_key, 1, length($2)) = $2 \
                     AND ($3 IS NULL OR kv_key > $3) \
                     AND (expires_at IS NULL OR expires_at > $4) \
                     ORDER BY kv_key LIMIT $5",
                )
                .bind(ns)
                .bind(prefix)
                .bind(after)
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *self.0)
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(key, value, version, expires_at, updated_at)| $crate::kv::KvRow {
                        key,
                        value,
                        version,
                        expires_at,
                        updated_at,
                    })
                    .collect())
            }

            async fn kv_next_version(&mut self) -> $crate::error::Result<i64> {
                let (version,): (i64,) = sqlx::query_as($next_version)
                    .fetch_one(&mut *self.0)
                    .await?;
                Ok(version)
            }

            async fn kv_upsert(
                &mut self,
                ns: &str,
                row: &$crate::kv::KvRow,
            ) -> $crate::error::Result<()> {
                sqlx::query(
                    "INSERT INTO kv (ns, kv_key, value, version, expires_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6) \
                     ON CONFLICT (ns, kv_key) DO UPDATE SET value = excluded.value, \
                     version = excluded.version, expires_at = excluded.expires_at, \
                     updated_at = excluded.updated_at",
                )
                .bind(ns)
                .bind(&row.key)
                .bind(&row.value)
                .bind(row.version)
                .bind(row.expires_at)
                .bind(row.updated_at)
                .execute(&mut *self.0)
                .await?;
                Ok(())
            }

            async fn kv_delete(&mut self, ns: &str, key: &str) -> $crate::error::Result<()> {
                sqlx::query("DELETE FROM kv WHERE ns = $1 AND kv_key = $2")
                    .bind(ns)
                    .bind(key)
                    .execute(&mut *self.0)
                    .await?;
                Ok(())
            }
        }

        impl $store {
            /// Runs a KV call in one write transaction: committed when it
            /// ran to the end, rolled back when a required op failed.
            pub(crate) async fn kv(
                &self,
                ops: &[$crate::kv::KvRequest],
                now: i64,
            ) -> $crate::error::Result<$crate::kv::KvOutcome> {
                let mut tx = self.begin_write().await?;
                let outcome = $crate::kv::eval::run(&mut $tx(&mut *tx), ops, now, 0).await?;
                match &outcome {
                    $crate::kv::KvOutcome::Done(_) => tx.commit().await?,
                    $crate::kv::KvOutcome::Aborted(_) => tx.rollback().await?,
                }
                Ok(outcome)
            }

            /// Deletes at most `limit` rows expired at `now`; returns how many.
            /// The outer `expires_at` test is checked again on a row that a
            /// writer renewed meanwhile, so a fresh write is never swept.
            pub(crate) async fn kv_sweep(&self, now: i64, limit: i64) -> $crate::error::Result<u64> {
                let mut tx = self.begin_write().await?;
                let done = sqlx::query(concat!(
                    "DELETE FROM kv WHERE expires_at <= $1 AND (ns, kv_key) IN \
                     (SELECT ns, kv_key FROM kv WHERE expires_at <= $1 LIMIT $2 ",
                    $skip_locked,
                    ")"
                ))
                .bind(now)
                .bind(limit)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(done.rows_affected())
            }
        }
    };
}

pub(crate) use kv_statements;
