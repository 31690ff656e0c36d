//! Kafka producer ids and per-partition producer state.

use crate::backend::{on_db, Conn, Store};
use crate::error::{Result, StorageError};
use crate::model::PartitionId;
use crate::producers::{
    pack, unpack, ProducerError, ProducerIdentity, ProducerInfo, ProducerState,
};

/// A `producers` row as InitProducerId returns it.
#[derive(sqlx::FromRow)]
struct IdRow {
    id: i64,
    epoch: i32,
}

/// A `producer_state` row.
#[derive(sqlx::FromRow)]
struct StateRow {
    producer_id: i64,
    epoch: i32,
    batches: Vec<u8>,
    updated_at: i64,
}

/// See [`crate::Engine::init_producer_id`].
pub(crate) async fn init_id(
    store: &Store,
    transactional_id: Option<&str>,
    current: Option<ProducerIdentity>,
    now_ms: i64,
) -> Result<ProducerIdentity> {
    let mut tx = store.begin_write().await?;
    let identity = init_id_in(&mut tx.conn(), transactional_id, current, now_ms).await?;
    tx.commit().await?;
    Ok(identity)
}

/// [`init_id`] inside a write transaction (InitProducerId of a
/// transactional id changes its transaction in the same one).
pub(crate) async fn init_id_in(
    conn: &mut Conn<'_>,
    transactional_id: Option<&str>,
    current: Option<ProducerIdentity>,
    now_ms: i64,
) -> Result<ProducerIdentity> {
    let bumped: Option<IdRow> = on_db!(conn, c => match (transactional_id, current) {
        (Some(txn), _) => Some(
            sqlx::query_as(
                "INSERT INTO producers (transactional_id, epoch, updated_at) VALUES ($1, 0, $2) \
                 ON CONFLICT (transactional_id) DO UPDATE SET epoch = producers.epoch + 1, \
                 updated_at = excluded.updated_at RETURNING id, epoch",
            )
            // Bytes: a transactional id may hold NUL (see the migrations).
            .bind(txn.as_bytes())
            .bind(now_ms)
            .fetch_one(&mut **c)
            .await?,
        ),
        (None, Some(ProducerIdentity { id, epoch })) => sqlx::query_as(
            "UPDATE producers SET epoch = epoch + 1, updated_at = $3 \
             WHERE id = $1 AND epoch = $2 AND transactional_id IS NULL RETURNING id, epoch",
        )
        .bind(id)
        .bind(i32::from(epoch))
        .bind(now_ms)
        .fetch_optional(&mut **c)
        .await?,
        (None, None) => None,
    });
    let row = match bumped {
        // An exhausted epoch, or a fresh idempotent producer: a new id.
        Some(row) if row.epoch < i32::from(i16::MAX) => row,
        None if transactional_id.is_none() && current.is_some() => {
            return Err(StorageError::Producer(ProducerError::Fenced));
        }
        _ => on_db!(conn, c => sqlx::query_as(
            "INSERT INTO producers (transactional_id, epoch, updated_at) \
             VALUES (NULL, 0, $1) RETURNING id, epoch",
        )
        .bind(now_ms)
        .fetch_one(&mut **c)
        .await?),
    };
    Ok(ProducerIdentity {
        id: row.id,
        epoch: row.epoch as i16,
    })
}

/// The producers with state on a partition.
pub(crate) async fn on_partition(
    store: &Store,
    partition_id: PartitionId,
) -> Result<Vec<ProducerInfo>> {
    let rows: Vec<StateRow> = on_db!(store.reader(), pool => sqlx::query_as(
        "SELECT producer_id, epoch, batches, updated_at FROM producer_state \
         WHERE partition_id = $1 ORDER BY producer_id",
    )
    .bind(partition_id)
    .fetch_all(pool)
    .await?);
    rows.into_iter()
        .map(|r| {
            let batches = unpack(&r.batches)?;
            Ok(ProducerInfo {
                producer_id: r.producer_id,
                epoch: r.epoch as i16,
                last_sequence: batches.last().map_or(-1, |b| b.last_sequence),
                last_timestamp_ms: r.updated_at,
            })
        })
        .collect()
}

/// Deletes up to `limit` producer states last updated before `before_ms`.
pub(crate) async fn expire(store: &Store, before_ms: i64, limit: i64) -> Result<u64> {
    let mut tx = store.begin_write().await?;
    let done = on_db!(tx.conn(), c => sqlx::query(
        "DELETE FROM producer_state WHERE (partition_id, producer_id) IN \
         (SELECT partition_id, producer_id FROM producer_state WHERE updated_at < $1 LIMIT $2)",
    )
    .bind(before_ms)
    .bind(limit)
    .execute(c)
    .await?
    .rows_affected());
    tx.commit().await?;
    Ok(done)
}

/// A producer's state on a partition, inside an append.
pub(crate) async fn state(
    conn: &mut Conn<'_>,
    partition_id: PartitionId,
    producer_id: i64,
) -> Result<Option<ProducerState>> {
    let row: Option<StateRow> = on_db!(conn, c => sqlx::query_as(
        "SELECT producer_id, epoch, batches, updated_at FROM producer_state \
         WHERE partition_id = $1 AND producer_id = $2",
    )
    .bind(partition_id)
    .bind(producer_id)
    .fetch_optional(&mut **c)
    .await?);
    row.map(|r| {
        Ok(ProducerState {
            epoch: r.epoch as i16,
            batches: unpack(&r.batches)?,
            updated_at: r.updated_at,
        })
    })
    .transpose()
}

/// Stores producer states, (partition id, producer id, state), inside an append.
pub(crate) async fn save(
    conn: &mut Conn<'_>,
    states: &[(PartitionId, i64, ProducerState)],
) -> Result<()> {
    for (partition_id, producer_id, state) in states {
        on_db!(conn, c => { sqlx::query(
            "INSERT INTO producer_state (partition_id, producer_id, epoch, batches, updated_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (partition_id, producer_id) DO UPDATE \
             SET epoch = excluded.epoch, batches = excluded.batches, updated_at = excluded.updated_at",
        )
        .bind(partition_id)
        .bind(producer_id)
        .bind(i32::from(state.epoch))
        .bind(pack(&state.batches))
        .bind(state.updated_at)
        .execute(&mut **c)
        .await?; });
    }
    Ok(())
}
