//! The mirror's bookkeeping: mirrored topics, their fence and errors, and
//! the source's high watermarks (see [`crate::mirror`]).

use crate::backend::{on_db, Conn, Store};
use crate::error::Result;
use crate::model::PartitionId;

/// Registers `topic` as mirrored from `source` unless it already is (a
/// fenced topic stays fenced); whether it is fenced. A row that only
/// showed an error (fenced, never reported: the mirror could not take the
/// topic) is taken now.
pub(crate) async fn register(
    store: &Store,
    topic: &str,
    source: &str,
    now_ms: i64,
) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let fenced: bool = on_db!(tx.conn(), c => {
        sqlx::query(
            "INSERT INTO mirror_topics (topic, source, fenced, error, updated_at) \
             VALUES ($1, $2, FALSE, NULL, $3) \
             ON CONFLICT (topic) DO UPDATE SET fenced = FALSE, source = excluded.source, \
             updated_at = excluded.updated_at \
             WHERE mirror_topics.fenced AND NOT EXISTS \
             (SELECT 1 FROM mirror_partitions mp WHERE mp.topic = mirror_topics.topic)",
        )
        .bind(topic)
        .bind(source)
        .bind(now_ms)
        .execute(&mut *c)
        .await?;
        sqlx::query_scalar("SELECT fenced FROM mirror_topics WHERE topic = $1")
            .bind(topic)
            .fetch_one(&mut *c)
            .await?
    });
    mark_queue(&mut tx.conn(), topic).await?;
    tx.commit().await?;
    Ok(fenced)
}

/// Sets (or with `None` clears) the error shown for `topic`, creating its
/// row when the topic was never registered (the mirror could not take it):
/// such a row is fenced, so that a local topic the mirror did not take
/// (another partition count, say) keeps its local producers.
pub(crate) async fn set_error(
    store: &Store,
    topic: &str,
    source: &str,
    error: Option<&str>,
    now_ms: i64,
) -> Result<()> {
    let mut tx = store.begin_write().await?;
    on_db!(tx.conn(), c => {
        sqlx::query(
            "INSERT INTO mirror_topics (topic, source, fenced, error, updated_at) \
             VALUES ($1, $2, TRUE, $3, $4) \
             ON CONFLICT (topic) DO UPDATE SET error = excluded.error, updated_at = excluded.updated_at",
        )
        .bind(topic)
        .bind(source)
        .bind(error)
        .bind(now_ms)
        .execute(&mut *c)
        .await?;
    });
    mark_queue(&mut tx.conn(), topic).await?;
    tx.commit().await?;
    Ok(())
}

/// Copies whether `topic` is mirrored and not fenced into its queue's
/// `mirrored` flag, which appends read with the queue row: called in every
/// transaction that registers, fences or creates the topic.
pub(crate) async fn mark_queue(conn: &mut Conn<'_>, topic: &str) -> Result<()> {
    on_db!(conn, c => sqlx::query(
        "UPDATE queues SET mirrored = EXISTS (SELECT 1 FROM mirror_topics m \
         WHERE m.topic = queues.name AND m.fenced = FALSE) WHERE name = $1",
    )
    .bind(topic)
    .execute(&mut **c)
    .await
    .map(drop)?);
    Ok(())
}

/// Stores the source's high watermark of each (partition index, offset).
pub(crate) async fn report_watermarks(
    store: &Store,
    topic: &str,
    watermarks: &[(i32, i64)],
    now_ms: i64,
) -> Result<()> {
    let mut tx = store.begin_write().await?;
    on_db!(tx.conn(), c => {
        for (index, hw) in watermarks {
            sqlx::query(
                "INSERT INTO mirror_partitions (topic, kafka_index, source_high_watermark, updated_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (topic, kafka_index) DO UPDATE SET \
                 source_high_watermark = excluded.source_high_watermark, updated_at = excluded.updated_at",
            )
            .bind(topic)
            .bind(index)
            .bind(hw)
            .bind(now_ms)
            .execute(&mut *c)
            .await?;
        }
    });
    tx.commit().await?;
    Ok(())
}

/// Moves an empty partition's log start up to `first` (the source's first
/// offset), so earliest-offset lookups answer what the source does.
pub(crate) async fn raise_empty_log_start(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    first: i64,
) -> Result<()> {
    on_db!(conn, c => sqlx::query(
        "UPDATE partitions SET log_start = $1 \
         WHERE id = $2 AND log_start = next_offset AND log_start < $1",
    )
    .bind(first)
    .bind(partition_id)
    .execute(&mut **c)
    .await
    .map(drop)?);
    Ok(())
}

/// One row of the status: a mirrored topic with one of its partitions
/// (`kafka_index` NULL when none was reported yet).
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct StatusRow {
    pub topic: String,
    pub source: String,
    pub fenced: bool,
    pub error: Option<String>,
    pub kafka_index: Option<i32>,
    pub source_high_watermark: Option<i64>,
    /// The local partition's next offset: the mirror's progress.
    pub next_offset: Option<i64>,
}

const STATUS: &str = "SELECT m.topic, m.source, m.fenced, m.error, mp.kafka_index, \
     mp.source_high_watermark, p.next_offset \
     FROM mirror_topics m \
     LEFT JOIN mirror_partitions mp ON mp.topic = m.topic \
     LEFT JOIN queues q ON q.name = m.topic \
     LEFT JOIN partitions p ON p.queue_id = q.id AND p.kafka_index = mp.kafka_index";

/// The status rows of every mirrored topic, by topic and partition.
pub(crate) async fn status(store: &Store) -> Result<Vec<StatusRow>> {
    let sql = format!("{STATUS} ORDER BY m.topic, mp.kafka_index");
    Ok(
        on_db!(store.reader(), pool => sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await?),
    )
}

/// Fences `topic` in `conn`'s transaction if every reported partition has
/// caught up with the source; the partitions still behind otherwise, as
/// (index, mirrored offset, source high watermark). The caller holds the
/// topic's partition locks.
pub(crate) async fn fence(
    conn: &mut Conn<'_>,
    topic: &str,
    now_ms: i64,
) -> Result<Vec<(i32, i64, i64)>> {
    let sql = format!("{STATUS} WHERE m.topic = $1 ORDER BY mp.kafka_index");
    let rows: Vec<StatusRow> = on_db!(conn, c => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(topic).fetch_all(&mut **c).await?);
    let behind: Vec<(i32, i64, i64)> = rows
        .iter()
        .filter_map(|r| {
            let index = r.kafka_index?;
            let hw = r.source_high_watermark?;
            let mirrored = r.next_offset.unwrap_or(0);
            (mirrored < hw).then_some((index, mirrored, hw))
        })
        .collect();
    if behind.is_empty() {
        on_db!(conn, c => sqlx::query(
            "UPDATE mirror_topics SET fenced = TRUE, updated_at = $2 WHERE topic = $1",
        )
        .bind(topic)
        .bind(now_ms)
        .execute(&mut **c)
        .await
        .map(drop)?);
        mark_queue(conn, topic).await?;
    }
    Ok(behind)
}
