//! SCRAM credentials per user and mechanism.

use crate::backend::{on_db, Store};
use crate::users::{ScramCredential, UserError};

/// Inserts or replaces the credential of (`user`, `mechanism`).
pub(crate) async fn put(
    store: &Store,
    user: &str,
    mechanism: &str,
    c: &ScramCredential,
    now_ms: i64,
) -> Result<(), UserError> {
    let mut tx = store.begin_write().await?;
    on_db!(tx.conn(), conn => {
        sqlx::query(
            "INSERT INTO scram_credentials \
             (username, mechanism, salt, iterations, stored_key, server_key, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (username, mechanism) DO UPDATE SET salt = excluded.salt, \
             iterations = excluded.iterations, stored_key = excluded.stored_key, \
             server_key = excluded.server_key, updated_at = excluded.updated_at",
        )
        .bind(user)
        .bind(mechanism)
        .bind(&c.salt)
        .bind(c.iterations)
        .bind(&c.stored_key)
        .bind(&c.server_key)
        .bind(now_ms)
        .execute(conn)
        .await?;
    });
    tx.commit().await?;
    Ok(())
}

/// The credential of (`user`, `mechanism`), if any.
pub(crate) async fn get(
    store: &Store,
    user: &str,
    mechanism: &str,
) -> Result<Option<ScramCredential>, UserError> {
    let row: Option<CredentialRow> = on_db!(store.reader(), pool =>
        sqlx::query_as(
            "SELECT salt, iterations, stored_key, server_key FROM scram_credentials \
             WHERE username = $1 AND mechanism = $2",
        )
        .bind(user)
        .bind(mechanism)
        .fetch_optional(pool)
        .await?
    );
    Ok(row.map(|r| ScramCredential {
        salt: r.salt,
        iterations: r.iterations,
        stored_key: r.stored_key,
        server_key: r.server_key,
    }))
}

#[derive(sqlx::FromRow)]
struct CredentialRow {
    salt: Vec<u8>,
    iterations: i32,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

/// Deletes `user`'s credential for `mechanism`, or all of them; whether
/// any row went.
pub(crate) async fn delete(
    store: &Store,
    user: &str,
    mechanism: Option<&str>,
) -> Result<bool, UserError> {
    let mut tx = store.begin_write().await?;
    let deleted = on_db!(tx.conn(), conn =>
        sqlx::query(
            "DELETE FROM scram_credentials WHERE username = $1 \
             AND ($2 IS NULL OR mechanism = $2)",
        )
        .bind(user)
        .bind(mechanism)
        .execute(conn)
        .await?
        .rows_affected()
    );
    tx.commit().await?;
    Ok(deleted > 0)
}

/// A credential as listed: no salt, no keys.
#[derive(sqlx::FromRow)]
pub(crate) struct ListedCredential {
    pub username: String,
    pub mechanism: String,
    pub iterations: i32,
}

/// Every credential, by user then mechanism.
pub(crate) async fn list(store: &Store) -> Result<Vec<ListedCredential>, UserError> {
    Ok(on_db!(store.reader(), pool =>
        sqlx::query_as(
            "SELECT username, mechanism, iterations FROM scram_credentials \
             ORDER BY username, mechanism",
        )
        .fetch_all(pool)
        .await?
    ))
}
