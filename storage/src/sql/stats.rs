//! The statements a metrics scrape runs: one each, aggregated by the
//! database, on a reader.

use crate::backend::{on_db, Reader};
use crate::error::Result;
use crate::stats::{GroupLag, PartitionSize, TopicStats};

/// A row of [`topics`].
#[derive(sqlx::FromRow)]
struct TopicRow {
    topic: String,
    partition: Option<String>,
    partitions: i64,
    high_watermark: i64,
    log_start: i64,
    bytes_per_record: Option<f64>,
}

/// A row of [`lag`].
#[derive(sqlx::FromRow)]
struct LagRow {
    consumer_group: String,
    topic: String,
    partition: Option<String>,
    lag: i64,
}

/// Per topic: partitions, summed offsets, and the bytes per record of the
/// newest segment of its most recently written partition (one index probe
/// per topic). Per partition: the same from each partition's own newest
/// segment (one probe per partition, which the operator asked for).
const TOPICS: &str = "SELECT q.name AS topic, CAST(NULL AS TEXT) AS partition, \
     COUNT(*) AS partitions, \
     CAST(SUM(p.next_offset) AS BIGINT) AS high_watermark, \
     CAST(SUM(p.log_start) AS BIGINT) AS log_start, \
     (SELECT CAST(length(s.records) AS DOUBLE PRECISION) / s.record_count FROM segments s \
      WHERE s.partition_id = (SELECT p2.id FROM partitions p2 WHERE p2.queue_id = q.id \
                              ORDER BY p2.last_created_at DESC LIMIT 1) \
      ORDER BY s.base_offset DESC LIMIT 1) AS bytes_per_record \
     FROM queues q JOIN partitions p ON p.queue_id = q.id GROUP BY q.id, q.name ORDER BY q.name";

const PARTITIONS: &str = "SELECT q.name AS topic, p.name AS partition, \
     CAST(1 AS BIGINT) AS partitions, p.next_offset AS high_watermark, p.log_start, \
     (SELECT CAST(length(s.records) AS DOUBLE PRECISION) / s.record_count FROM segments s \
      WHERE s.partition_id = p.id ORDER BY s.base_offset DESC LIMIT 1) AS bytes_per_record \
     FROM queues q JOIN partitions p ON p.queue_id = q.id ORDER BY q.name, p.kafka_index";

/// Offsets and estimated sizes per topic, or per partition.
pub(crate) async fn topics(db: Reader<'_>, per_partition: bool) -> Result<Vec<TopicStats>> {
    let sql = if per_partition { PARTITIONS } else { TOPICS };
    let rows: Vec<TopicRow> = on_db!(db, pool => sqlx::query_as(sql).fetch_all(pool).await?);
    Ok(rows
        .into_iter()
        .map(|r| TopicStats {
            stored_bytes_estimate: r.bytes_per_record.unwrap_or(0.0)
                * (r.high_watermark - r.log_start).max(0) as f64,
            topic: r.topic,
            partition: r.partition,
            partitions: r.partitions,
            high_watermark: r.high_watermark,
            log_start: r.log_start,
        })
        .collect())
}

/// A row of [`partition_sizes`].
#[derive(sqlx::FromRow)]
struct SizeRow {
    topic: String,
    kafka_index: i32,
    bytes: i64,
}

/// Each partition's segments that end after its log start, summed (the
/// same measure retention's `retention.bytes` applies).
pub(crate) async fn partition_sizes(db: Reader<'_>) -> Result<Vec<PartitionSize>> {
    let rows: Vec<SizeRow> = on_db!(db, pool => sqlx::query_as(
        "SELECT q.name AS topic, p.kafka_index, \
         CAST(COALESCE((SELECT SUM(length(s.records)) FROM segments s \
                        WHERE s.partition_id = p.id AND s.base_offset + s.record_count > p.log_start), \
                       0) AS BIGINT) AS bytes \
         FROM queues q JOIN partitions p ON p.queue_id = q.id ORDER BY q.name, p.kafka_index",
    )
    .fetch_all(pool)
    .await?);
    Ok(rows
        .into_iter()
        .map(|r| PartitionSize {
            topic: r.topic,
            index: r.kafka_index,
            bytes: r.bytes,
        })
        .collect())
}

/// A position's lag, as [`crate::GroupPosition::lag`] counts it: what lies
/// after `max(committed, log start)` up to the next offset, never negative.
/// In SQL so that the database sums it instead of sending every position.
const LAG: &str = "CASE WHEN p.next_offset > c.committed_offset AND p.next_offset > p.log_start \
     THEN p.next_offset - CASE WHEN c.committed_offset > p.log_start \
                                THEN c.committed_offset ELSE p.log_start END \
     ELSE 0 END";

/// Lag per group and topic, or per group and partition.
pub(crate) async fn lag(db: Reader<'_>, per_partition: bool) -> Result<Vec<GroupLag>> {
    let sql = if per_partition {
        format!(
            "SELECT c.consumer_group, q.name AS topic, p.name AS partition, \
             CAST({LAG} AS BIGINT) AS lag \
             FROM consumer_cursors c JOIN partitions p ON p.id = c.partition_id \
             JOIN queues q ON q.id = p.queue_id ORDER BY c.consumer_group, q.name, p.kafka_index"
        )
    } else {
        format!(
            "SELECT c.consumer_group, q.name AS topic, CAST(NULL AS TEXT) AS partition, \
             CAST(SUM({LAG}) AS BIGINT) AS lag \
             FROM consumer_cursors c JOIN partitions p ON p.id = c.partition_id \
             JOIN queues q ON q.id = p.queue_id \
             GROUP BY c.consumer_group, q.name ORDER BY c.consumer_group, q.name"
        )
    };
    let rows: Vec<LagRow> =
        on_db!(db, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await?);
    Ok(rows
        .into_iter()
        .map(|r| GroupLag {
            group: r.consumer_group,
            topic: r.topic,
            partition: r.partition,
            lag: r.lag,
        })
        .collect())
}
