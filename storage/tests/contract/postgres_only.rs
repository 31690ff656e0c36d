//! What only PostgreSQL does: how it stores segments, and how the pool
//! treats connections the server closed.

use sqlx::Connection;
use storage::Record;

use crate::log::{kafka, one_partition_topic};
use crate::support::{read_messages, Db};

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

/// On a server without autovacuum, retention vacuums `segments` once it
/// has deleted enough rows, so their space is reused (`storage/src/vacuum.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retention_vacuums_what_it_deleted_when_autovacuum_is_off() {
    let db = Db::postgres().await;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let autovacuum: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
        .fetch_one(&mut conn)
        .await
        .expect("setting");
    if autovacuum == "on" {
        println!("skipped: this server autovacuums, so the broker leaves VACUUM to it");
        return;
    }
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "vacuumed").await;
    // 10,001 one-record segments, past the debt that is due: one appended,
    // copied 10,000 times behind it (appends would share group commits).
    engine
        .append_records("vacuumed", p, vec![kafka("x", 0)])
        .await
        .expect("append");
    db.execute(
        "INSERT INTO segments (partition_id, base_offset, record_count, created_at, \
         max_timestamp, format, records) \
         SELECT partition_id, g, 1, created_at, max_timestamp, format, records \
         FROM segments, generate_series(1, 10000) AS g",
    )
    .await;
    db.execute("UPDATE partitions SET next_offset = 10001")
        .await;
    engine.delete_records(p, -1).await.expect("delete records");
    while engine.enforce_retention().await.expect("retention") {}

    let vacuums = || async {
        let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
        sqlx::query_scalar::<_, i64>(
            "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'segments'",
        )
        .fetch_one(&mut conn)
        .await
        .expect("stats")
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while vacuums().await == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "segments was never vacuumed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM segments")
        .fetch_one(&mut conn)
        .await
        .expect("count");
    assert_eq!(left, 0);
}

/// A sealed run's pages stay in their heap rows (migration 0023 and
/// `run::PAGE_ENTRIES`): a "maybe" lookup then reads one heap tuple rather
/// than a TOAST index entry and four chunks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dedup_pages_are_not_toasted() {
    let db = Db::postgres().await;
    let engine = db.engine().await;
    crate::push::configure_window(&engine, "inline", 3600).await;
    // More than one tail (16,384 ids), so a run of full pages is sealed.
    crate::dedup::push_ids(&engine, "inline", 0..20_000).await;
    assert!(db.count("SELECT count(*) FROM dedup_pages").await > 30);

    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let toasted: i64 = sqlx::query_scalar(
        "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = 'dedup_pages'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("toast size");
    assert_eq!(toasted, 0, "run pages were moved to TOAST");
}

/// A pooled connection idle for a second or more is checked before use
/// (the server, a restart or a proxy may have closed it); one in steady use
/// is handed out unchecked, which saves a round trip per statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connections_the_server_closed_are_replaced_before_use() {
    let db = Db::postgres().await;
    let engine = db.engine().await;
    let p = one_partition_topic(&engine, "reconnected").await;
    for i in 0..3 {
        engine
            .append_records("reconnected", p, vec![kafka("before", i)])
            .await
            .expect("append");
    }
    // Every connection of the engine's pool closed by the server.
    let mut admin = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let closed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(&mut admin)
    .await
    .expect("terminate");
    assert!(!closed.is_empty(), "the engine held no connection");
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;

    // Reads are not retried: each one that took a closed connection would
    // fail. As many as the pool may hold, so every closed one is taken.
    for _ in 0..16 {
        let read = read_messages(&engine, p, 0, 100, 1 << 20)
            .await
            .expect("read after the server closed the pool's connections");
        assert_eq!(read.len(), 3);
    }
    engine
        .append_records("reconnected", p, vec![kafka("after", 3)])
        .await
        .expect("append after the server closed the pool's connections");
}
