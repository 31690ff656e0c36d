//! Kafka producer ids and per-partition producer state.

/// Expands to the producer methods of a store type with `begin_write()` and `reader()`.
macro_rules! producer_statements {
    ($store:ty) => {
        impl $store {
            /// See [`crate::Engine::init_producer_id`].
            pub(crate) async fn init_producer_id(
                &self,
                transactional_id: Option<&str>,
                current: Option<(i64, i16)>,
                now_ms: i64,
            ) -> $crate::error::Result<(i64, i16)> {
                let mut tx = self.begin_write().await?;
                let bumped: Option<(i64, i32)> = match (transactional_id, current) {
                    (Some(txn), _) => Some(
                        sqlx::query_as(
                            "INSERT INTO producers (transactional_id, epoch, updated_at) VALUES ($1, 0, $2) \
                             ON CONFLICT (transactional_id) DO UPDATE SET epoch = producers.epoch + 1, \
                             updated_at = excluded.updated_at RETURNING id, epoch",
                        )
                        .bind(txn)
                        .bind(now_ms)
                        .fetch_one(&mut *tx)
                        .await?,
                    ),
                    (None, Some((id, epoch))) => sqlx::query_as(
                        "UPDATE producers SET epoch = epoch + 1, updated_at = $3 \
                         WHERE id = $1 AND epoch = $2 AND transactional_id IS NULL RETURNING id, epoch",
                    )
                    .bind(id)
                    .bind(i32::from(epoch))
                    .bind(now_ms)
                    .fetch_optional(&mut *tx)
                    .await?,
                    (None, None) => None,
                };
                let (id, epoch) = match bumped {
                    // An exhausted epoch, or a fresh idempotent producer: a new id.
                    Some((id, epoch)) if epoch < i32::from(i16::MAX) => (id, epoch),
                    _ => {
                        if let (None, Some(_)) = (transactional_id, current) {
                            if bumped.is_none() {
                                return Err($crate::StorageError::Producer(
                                    $crate::producers::ProducerError::Fenced,
                                ));
                            }
                        }
                        sqlx::query_as(
                            "INSERT INTO producers (transactional_id, epoch, updated_at) \
                             VALUES (NULL, 0, $1) RETURNING id, epoch",
                        )
                        .bind(now_ms)
                        .fetch_one(&mut *tx)
                        .await?
                    }
                };
                tx.commit().await?;
                Ok((id, epoch as i16))
            }

            /// The producers with state on a partition.
            pub(crate) async fn producers(
                &self,
                partition_id: i64,
            ) -> $crate::error::Result<Vec<$crate::producers::ProducerInfo>> {
                let rows: Vec<(i64, i32, Vec<u8>, i64)> = sqlx::query_as(
                    "SELECT producer_id, epoch, batches, updated_at FROM producer_state \
                     WHERE partition_id = $1 ORDER BY producer_id",
                )
                .bind(partition_id)
                .fetch_all(self.reader())
                .await?;
                rows.into_iter()
                    .map(|(producer_id, epoch, batches, updated_at)| {
                        let batches = $crate::producers::unpack(&batches)?;
                        Ok($crate::producers::ProducerInfo {
                            producer_id,
                            epoch: epoch as i16,
                            last_sequence: batches.last().map_or(-1, |b| b.last_sequence),
                            last_timestamp_ms: updated_at,
                        })
                    })
                    .collect()
            }

            /// Deletes up to `limit` producer states last updated before `before_ms`.
            pub(crate) async fn expire_producers(&self, before_ms: i64, limit: i64) -> $crate::error::Result<u64> {
                let mut tx = self.begin_write().await?;
                let done = sqlx::query(
                    "DELETE FROM producer_state WHERE (partition_id, producer_id) IN \
                     (SELECT partition_id, producer_id FROM producer_state WHERE updated_at < $1 LIMIT $2)",
                )
                .bind(before_ms)
                .bind(limit)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                tx.commit().await?;
                Ok(done)
            }

            /// A producer's state on a partition, inside an append.
            async fn producer_state_in(
                conn: &mut <<$store as $crate::sql::Backend>::Db as sqlx::Database>::Connection,
                partition_id: i64,
                producer_id: i64,
            ) -> $crate::error::Result<Option<$crate::producers::ProducerState>> {
                let row: Option<(i32, Vec<u8>, i64)> = sqlx::query_as(
                    "SELECT epoch, batches, updated_at FROM producer_state \
                     WHERE partition_id = $1 AND producer_id = $2",
                )
                .bind(partition_id)
                .bind(producer_id)
                .fetch_optional(&mut *conn)
                .await?;
                row.map(|(epoch, batches, updated_at)| {
                    Ok($crate::producers::ProducerState {
                        epoch: epoch as i16,
                        batches: $crate::producers::unpack(&batches)?,
                        updated_at,
                    })
                })
                .transpose()
            }

            /// Stores producer states, inside an append.
            async fn save_producers_in(
                conn: &mut <<$store as $crate::sql::Backend>::Db as sqlx::Database>::Connection,
                states: &[(i64, i64, $crate::producers::ProducerState)],
            ) -> $crate::error::Result<()> {
                for (partition_id, producer_id, state) in states {
                    sqlx::query(
                        "INSERT INTO producer_state (partition_id, producer_id, epoch, batches, updated_at) \
                         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (partition_id, producer_id) DO UPDATE \
                         SET epoch = excluded.epoch, batches = excluded.batches, updated_at = excluded.updated_at",
                    )
                    .bind(partition_id)
                    .bind(producer_id)
                    .bind(i32::from(state.epoch))
                    .bind($crate::producers::pack(&state.batches))
                    .bind(state.updated_at)
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(())
            }
        }
    };
}

pub(crate) use producer_statements;
