//! Committed offsets as Kafka groups see them: the `consumer_cursors` rows
//! that native consumer groups move too.

/// Expands to the committed-offset methods of a store type with `begin_write()` and `reader()`.
macro_rules! offset_statements {
    ($store:ty) => {
        impl $store {
            /// Stores committed offsets of `group` in one transaction.
            pub(crate) async fn commit_offsets(
                &self,
                group: &str,
                commits: &[(i64, $crate::offsets::CommittedOffset)],
                now_ms: i64,
            ) -> $crate::error::Result<()> {
                let mut tx = self.begin_write().await?;
                for (partition_id, c) in commits {
                    sqlx::query(
                        "INSERT INTO consumer_cursors (partition_id, consumer_group, committed_offset, metadata, \
                         leader_epoch, retry_count, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 0, $6, $6) \
                         ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
                         committed_offset = excluded.committed_offset, metadata = excluded.metadata, \
                         leader_epoch = excluded.leader_epoch, retry_count = 0, updated_at = excluded.updated_at",
                    )
                    .bind(partition_id)
                    .bind(group)
                    .bind(c.offset)
                    .bind(&c.metadata)
                    .bind(c.leader_epoch)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            /// Every committed offset of `group`: (topic, Kafka partition, offset).
            pub(crate) async fn committed_offsets(
                &self,
                group: &str,
            ) -> $crate::error::Result<Vec<(String, i32, $crate::offsets::CommittedOffset)>> {
                let rows: Vec<(String, i32, i64, Option<String>, Option<i32>)> = sqlx::query_as(
                    "SELECT q.name, p.kafka_index, c.committed_offset, c.metadata, c.leader_epoch \
                     FROM consumer_cursors c JOIN partitions p ON p.id = c.partition_id \
                     JOIN queues q ON q.id = p.queue_id WHERE c.consumer_group = $1 \
                     ORDER BY q.name, p.kafka_index",
                )
                .bind(group)
                .fetch_all(self.reader())
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(topic, index, offset, metadata, leader_epoch)| {
                        (topic, index, $crate::offsets::CommittedOffset { offset, metadata, leader_epoch })
                    })
                    .collect())
            }

            /// Every group with a stored position, but the queue-mode one.
            pub(crate) async fn group_names(&self) -> $crate::error::Result<Vec<String>> {
                Ok(sqlx::query_scalar(
                    "SELECT DISTINCT consumer_group FROM consumer_cursors \
                     WHERE consumer_group <> $1 ORDER BY consumer_group",
                )
                .bind($crate::consume::QUEUE_MODE_GROUP)
                .fetch_all(self.reader())
                .await?)
            }

            /// Deletes the positions of `group` on the given partitions.
            pub(crate) async fn delete_offsets(
                &self,
                group: &str,
                partition_ids: &[i64],
            ) -> $crate::error::Result<u64> {
                let mut tx = self.begin_write().await?;
                let mut deleted = 0;
                for partition_id in partition_ids {
                    deleted += sqlx::query(
                        "DELETE FROM consumer_cursors WHERE partition_id = $1 AND consumer_group = $2",
                    )
                    .bind(partition_id)
                    .bind(group)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                }
                tx.commit().await?;
                Ok(deleted)
            }
        }
    };
}

pub(crate) use offset_statements;
