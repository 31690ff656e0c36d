//! The configs of brokers and groups (`kafka_resource_configs`).

use std::collections::BTreeMap;

use crate::backend::{on_db, Conn, Store};
use crate::error::Result;

/// A stored config; the value is UTF-8 bytes.
#[derive(sqlx::FromRow)]
struct ConfigRow {
    name: String,
    value: Vec<u8>,
}

fn to_map(rows: Vec<ConfigRow>) -> BTreeMap<String, String> {
    rows.into_iter()
        .map(|r| (r.name, String::from_utf8_lossy(&r.value).into_owned()))
        .collect()
}

const SELECT: &str = "SELECT name, value FROM kafka_resource_configs \
                      WHERE resource_type = $1 AND resource_name = $2";

/// The configs set on a resource.
pub(crate) async fn get(store: &Store, kind: i16, name: &str) -> Result<BTreeMap<String, String>> {
    let rows: Vec<ConfigRow> = on_db!(store.reader(), pool => sqlx::query_as(SELECT)
        .bind(kind)
        .bind(name.as_bytes())
        .fetch_all(pool)
        .await?);
    Ok(to_map(rows))
}

/// The configs set on a resource, inside `conn`.
pub(crate) async fn get_in(
    conn: &mut Conn<'_>,
    kind: i16,
    name: &str,
) -> Result<BTreeMap<String, String>> {
    let rows: Vec<ConfigRow> = on_db!(conn, c => sqlx::query_as(SELECT)
        .bind(kind)
        .bind(name.as_bytes())
        .fetch_all(&mut **c)
        .await?);
    Ok(to_map(rows))
}

/// Makes `configs` the configs set on a resource, inside `conn`.
pub(crate) async fn put(
    conn: &mut Conn<'_>,
    kind: i16,
    name: &str,
    configs: &BTreeMap<String, String>,
    now_ms: i64,
) -> Result<()> {
    on_db!(conn, c => { sqlx::query(
        "DELETE FROM kafka_resource_configs WHERE resource_type = $1 AND resource_name = $2",
    )
    .bind(kind)
    .bind(name.as_bytes())
    .execute(&mut **c)
    .await?; });
    for (config, value) in configs {
        on_db!(conn, c => { sqlx::query(
            "INSERT INTO kafka_resource_configs (resource_type, resource_name, name, value, \
             updated_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(kind)
        .bind(name.as_bytes())
        .bind(config)
        .bind(value.as_bytes())
        .bind(now_ms)
        .execute(&mut **c)
        .await?; });
    }
    Ok(())
}
