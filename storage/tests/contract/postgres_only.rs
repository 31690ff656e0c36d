//! What only PostgreSQL does: how it stores segments.

use sqlx::Connection;
use storage::Record;

use crate::log::{kafka, one_partition_topic};
use crate::support::Db;

/// Segments are TOASTed; LZ4 compresses them at a fraction of pglz's cost
/// (migration 0006). A server without LZ4 would silently keep pglz, so this
/// test names that cause when it fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn segments_are_compressed_with_lz4() {
    let db = Db::postgres().await;
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "compressed").await;
    let records: Vec<Record> = (0..5_000).map(|i| kafka(&"x".repeat(100), i)).collect();
    engine
        .append_records("compressed", p, records)
        .await
        .expect("append");

    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let (method, stored, raw): (Option<String>, i32, i32) = sqlx::query_as(
        "SELECT pg_column_compression(records), pg_column_size(records), octet_length(records) \
         FROM segments",
    )
    .fetch_one(&mut conn)
    .await
    .expect("one segment");
    assert_eq!(
        method.as_deref(),
        Some("lz4"),
        "segments are not LZ4-compressed: the server lacks LZ4 (PostgreSQL < 14 or built without it)"
    );
    assert!(stored < raw / 2, "{stored} bytes stored for {raw}");
}
