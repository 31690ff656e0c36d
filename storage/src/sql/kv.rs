//! The key/value store's statements. Writes to one key are serialised by
//! [`Conn::lock_key`] and versions drawn from [`Conn::next_kv_version`],
//! which is where the backends differ.

use crate::backend::{on_db, Conn, Store};
use crate::error::Result;
use crate::kv::KvRow;

/// Serialises writers of the given key hashes (ascending, so two writers
/// never deadlock) until the transaction ends.
pub(crate) async fn lock_keys(conn: &mut Conn<'_>, hashes: &[i64]) -> Result<()> {
    for &hash in hashes {
        conn.lock_key(hash).await?;
    }
    Ok(())
}

/// The live row of a key at `now`.
pub(crate) async fn get(
    conn: &mut Conn<'_>,
    ns: &str,
    key: &str,
    now: i64,
) -> Result<Option<KvRow>> {
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT kv_key AS key, value, version, expires_at, updated_at FROM kv \
         WHERE ns = $1 AND kv_key = $2 AND (expires_at IS NULL OR expires_at > $3)",
    )
    .bind(ns)
    .bind(key)
    .bind(now)
    .fetch_optional(&mut **c)
    .await?))
}

/// Up to `limit` live rows whose key starts with `prefix`, after `after`.
pub(crate) async fn prefix(
    conn: &mut Conn<'_>,
    ns: &str,
    prefix: &str,
    after: Option<&str>,
    limit: i64,
    now: i64,
) -> Result<Vec<KvRow>> {
    // `kv_key >= prefix` bounds the range scan; the substr test ends it at
    // the first key without the prefix.
    Ok(on_db!(conn, c => sqlx::query_as(
        "SELECT kv_key AS key, value, version, expires_at, updated_at FROM kv \
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
    .fetch_all(&mut **c)
    .await?))
}

/// Writes a row, replacing any (live or expired).
pub(crate) async fn upsert(conn: &mut Conn<'_>, ns: &str, row: &KvRow) -> Result<()> {
    on_db!(conn, c => {
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
        .execute(&mut **c)
        .await?;
    });
    Ok(())
}

/// Deletes a row.
pub(crate) async fn delete(conn: &mut Conn<'_>, ns: &str, key: &str) -> Result<()> {
    on_db!(conn, c => {
        sqlx::query("DELETE FROM kv WHERE ns = $1 AND kv_key = $2")
            .bind(ns)
            .bind(key)
            .execute(&mut **c)
            .await?;
    });
    Ok(())
}

/// Deletes at most `limit` rows expired at `now`; returns how many. The
/// outer `expires_at` test is checked again on a row that a writer renewed
/// meanwhile, so a fresh write is never swept; concurrent sweeps of several
/// brokers skip each other's rows.
pub(crate) async fn sweep(store: &Store, now: i64, limit: i64) -> Result<u64> {
    let mut tx = store.begin_write().await?;
    let mut conn = tx.conn();
    let sql = format!(
        "DELETE FROM kv WHERE expires_at <= $1 AND (ns, kv_key) IN \
         (SELECT ns, kv_key FROM kv WHERE expires_at <= $1 LIMIT $2 {})",
        conn.skip_locked()
    );
    let done = on_db!(&mut conn, c => sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(now)
        .bind(limit)
        .execute(&mut **c)
        .await?
        .rows_affected());
    tx.commit().await?;
    Ok(done)
}
