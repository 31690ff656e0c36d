//! The statements of consumption, the same on SQLite and PostgreSQL.
//!
//! [`consume_statements!`] expands inside each backend's `consume.rs` to the
//! [`ConsumeTx`](super::ConsumeTx) implementation of its transaction type
//! and to the store methods that begin, run and commit the transactions.
//! What differs between the backends is not the SQL but what it locks: on
//! PostgreSQL the upserts on `consumer_leases` take the row lock that
//! serialises a (partition, group) across brokers; on SQLite the single
//! writer (`BEGIN IMMEDIATE`) already serialises every write.

/// Expands to `impl ConsumeTx for $tx` (a wrapper of a `&mut` connection of
/// `$store`'s database) and to the consumption methods of `$store`.
/// `$try_lock` is the statement that locks a lease row without waiting
/// (selecting it when it could be locked), or `""` where every write is
/// serialised anyway (which is then also what `serialized` answers).
macro_rules! consume_statements {
    ($store:ty, $tx:ident, $try_lock:literal) => {
        impl $crate::consume::ConsumeTx for $tx<'_> {
            fn serialized(&self) -> bool {
                $try_lock.is_empty()
            }

            async fn try_lock(
                &mut self,
                partition_id: i64,
                group: &str,
            ) -> $crate::error::Result<bool> {
                if $try_lock.is_empty() {
                    return Ok(true);
                }
                let row: Option<(i64,)> = sqlx::query_as($try_lock)
                    .bind(partition_id)
                    .bind(group)
                    .fetch_optional(&mut *self.0)
                    .await?;
                Ok(row.is_some())
            }

            async fn claim(
                &mut self,
                partition_id: i64,
                group: &str,
                lease_id: &str,
                expires_at: i64,
                now: i64,
            ) -> $crate::error::Result<Option<$crate::consume::LeaseRow>> {
                let row: Option<LeaseTuple> = sqlx::query_as(
                    "INSERT INTO consumer_leases (partition_id, consumer_group, lease_id, expires_at, claimed_at) \
                     VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
                     lease_id = excluded.lease_id, expires_at = excluded.expires_at, claimed_at = excluded.claimed_at \
                     WHERE consumer_leases.expires_at <= $5 \
                     RETURNING lease_id, expires_at, span_start, span_end, delivered_to, attempts",
                )
                .bind(partition_id)
                .bind(group)
                .bind(lease_id)
                .bind(expires_at)
                .bind(now)
                .fetch_optional(&mut *self.0)
                .await?;
                Ok(row.map($crate::consume::sql::lease_row))
            }

            async fn lock_lease(
                &mut self,
                partition_id: i64,
                group: &str,
            ) -> $crate::error::Result<$crate::consume::LeaseRow> {
                let row: LeaseTuple = sqlx::query_as(
                    "INSERT INTO consumer_leases (partition_id, consumer_group) VALUES ($1, $2) \
                     ON CONFLICT (partition_id, consumer_group) DO UPDATE SET expires_at = consumer_leases.expires_at \
                     RETURNING lease_id, expires_at, span_start, span_end, delivered_to, attempts",
                )
                .bind(partition_id)
                .bind(group)
                .fetch_one(&mut *self.0)
                .await?;
                Ok($crate::consume::sql::lease_row(row))
            }

            async fn save_lease(
                &mut self,
                partition_id: i64,
                group: &str,
                lease: &$crate::consume::LeaseRow,
            ) -> $crate::error::Result<()> {
                sqlx::query(
                    "UPDATE consumer_leases SET lease_id = $3, expires_at = $4, span_start = $5, \
                     span_end = $6, delivered_to = $7, attempts = $8 \
                     WHERE partition_id = $1 AND consumer_group = $2",
                )
                .bind(partition_id)
                .bind(group)
                .bind(lease.lease_id.as_deref())
                .bind(lease.expires_at)
                .bind(lease.span_start)
                .bind(lease.span_end)
                .bind(lease.delivered_to)
                .bind(lease.attempts)
                .execute(&mut *self.0)
                .await?;
                Ok(())
            }

            async fn partition(
                &mut self,
                partition_id: i64,
                group: &str,
            ) -> $crate::error::Result<
                Option<($crate::consume::PartitionState, Option<$crate::consume::CursorRow>)>,
            > {
                let row: Option<(i64, String, String, i64, i64, String, Option<i64>, Option<i64>)> =
                    sqlx::query_as(
                        "SELECT q.id, q.name, p.name, p.next_offset, p.log_start, q.options, \
                         c.committed_offset, c.retry_count \
                         FROM partitions p JOIN queues q ON q.id = p.queue_id \
                         LEFT JOIN consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = $2 \
                         WHERE p.id = $1",
                    )
                    .bind(partition_id)
                    .bind(group)
                    .fetch_optional(&mut *self.0)
                    .await?;
                row.map($crate::consume::sql::partition_state).transpose()
            }

            async fn save_cursor(
                &mut self,
                partition_id: i64,
                group: &str,
                cursor: $crate::consume::CursorRow,
                now: i64,
            ) -> $crate::error::Result<()> {
                sqlx::query(
                    "INSERT INTO consumer_cursors \
                     (partition_id, consumer_group, committed_offset, retry_count, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $5) \
                     ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
                     committed_offset = excluded.committed_offset, retry_count = excluded.retry_count, \
                     metadata = NULL, leader_epoch = NULL, updated_at = excluded.updated_at",
                )
                .bind(partition_id)
                .bind(group)
                .bind(cursor.committed_offset)
                .bind(cursor.retry_count)
                .bind(now)
                .execute(&mut *self.0)
                .await?;
                Ok(())
            }

            async fn first_offset_at(
                &mut self,
                partition_id: i64,
                at: i64,
            ) -> $crate::error::Result<Option<i64>> {
                let row: Option<(i64,)> = sqlx::query_as(
                    "SELECT base_offset FROM segments WHERE partition_id = $1 AND created_at >= $2 \
                     ORDER BY created_at, base_offset LIMIT 1",
                )
                .bind(partition_id)
                .bind(at)
                .fetch_optional(&mut *self.0)
                .await?;
                Ok(row.map(|(o,)| o))
            }

            async fn subscription_start(
                &mut self,
                queue_id: i64,
                group: &str,
            ) -> $crate::error::Result<Option<Option<i64>>> {
                let row: Option<(Option<i64>,)> = sqlx::query_as(
                    "SELECT start_at FROM consumer_subscriptions WHERE queue_id = $1 AND consumer_group = $2",
                )
                .bind(queue_id)
                .bind(group)
                .fetch_optional(&mut *self.0)
                .await?;
                Ok(row.map(|(s,)| s))
            }

            async fn file_dead_letter(
                &mut self,
                letter: &$crate::consume::NewDeadLetter<'_>,
            ) -> $crate::error::Result<()> {
                sqlx::query(
                    "INSERT INTO dead_letters (queue_id, partition_id, consumer_group, message_offset, \
                     transaction_id, error_message, retry_count, message_created_at, failed_at, record) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                     ON CONFLICT (partition_id, consumer_group, message_offset) DO UPDATE SET \
                     error_message = excluded.error_message, retry_count = excluded.retry_count, \
                     failed_at = excluded.failed_at",
                )
                .bind(letter.queue_id)
                .bind(letter.partition_id)
                .bind(letter.group)
                .bind(letter.offset)
                .bind(&letter.transaction_id)
                .bind(letter.error)
                .bind(letter.retry_count)
                .bind(letter.created_at)
                .bind(letter.failed_at)
                .bind(&letter.record)
                .execute(&mut *self.0)
                .await?;
                Ok(())
            }
        }

        type LeaseTuple = (Option<String>, i64, i64, i64, i64, i64);

        impl $store {
            /// The id and options of a queue, without its partitions.
            pub(crate) async fn queue_ref(
                &self,
                name: &str,
            ) -> $crate::error::Result<Option<(i64, $crate::options::QueueOptions)>> {
                let row: Option<(i64, String)> =
                    sqlx::query_as("SELECT id, options FROM queues WHERE name = $1")
                        .bind(name)
                        .fetch_optional(self.reader())
                        .await?;
                row.map(|(id, options)| Ok((id, $crate::consume::sql::options(&options)?)))
                    .transpose()
            }

            /// Registers a named group's subscription on a queue unless it
            /// exists; a `new` or `from` registration seeds the group's
            /// cursor on every existing partition, so "new" means new
            /// relative to this moment. Returns whether it registered.
            pub(crate) async fn register(
                &self,
                queue_id: i64,
                group: &str,
                mode: $crate::consume::SubscriptionMode,
                now: i64,
            ) -> $crate::error::Result<bool> {
                use $crate::consume::SubscriptionMode;
                let start_at = match mode {
                    SubscriptionMode::All => None,
                    SubscriptionMode::New => Some(now),
                    SubscriptionMode::From(at) => Some(at),
                };
                let mut tx = self.begin_write().await?;
                let inserted: Option<(i64,)> = sqlx::query_as(
                    "INSERT INTO consumer_subscriptions (queue_id, consumer_group, mode, start_at, created_at) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING queue_id",
                )
                .bind(queue_id)
                .bind(group)
                .bind(mode.name())
                .bind(start_at)
                .bind(now)
                .fetch_optional(&mut *tx)
                .await?;
                if inserted.is_none() {
                    return Ok(false);
                }
                let start = match mode {
                    SubscriptionMode::All => None,
                    SubscriptionMode::New => Some("p.next_offset"),
                    SubscriptionMode::From(_) => Some(
                        "COALESCE((SELECT s.base_offset FROM segments s WHERE s.partition_id = p.id \
                         AND s.created_at >= $4 ORDER BY s.created_at, s.base_offset LIMIT 1), p.next_offset)",
                    ),
                };
                if let Some(start) = start {
                    sqlx::query(&format!(
                        "INSERT INTO consumer_cursors \
                         (partition_id, consumer_group, committed_offset, retry_count, created_at, updated_at) \
                         SELECT p.id, $2, {start}, 0, $3, $3 FROM partitions p WHERE p.queue_id = $1 \
                         ON CONFLICT DO NOTHING"
                    ))
                    .bind(queue_id)
                    .bind(group)
                    .bind(now)
                    .bind(start_at.unwrap_or(0))
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(true)
            }

            /// Partitions of the queue the group could claim now: messages
            /// after its cursor, no live lease, and (when the queue asks)
            /// quiet for the window buffer and old enough for the delay.
            /// Least recently claimed first.
            pub(crate) async fn candidates(
                &self,
                filter: &$crate::consume::pop::CandidateFilter<'_>,
            ) -> $crate::error::Result<Vec<(i64, bool)>> {
                let mut sql = String::from(
                    "SELECT p.id, l.partition_id IS NOT NULL FROM partitions p \
                     LEFT JOIN consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = $2 \
                     LEFT JOIN consumer_leases l ON l.partition_id = p.id AND l.consumer_group = $2 \
                     WHERE p.queue_id = $1 AND p.next_offset > p.log_start \
                     AND p.next_offset > COALESCE(c.committed_offset, 0) \
                     AND (l.expires_at IS NULL OR l.expires_at <= $3)",
                );
                if filter.partition.is_some() {
                    sql.push_str(" AND p.name = $5");
                }
                if filter.quiet_since.is_some() {
                    sql.push_str(" AND p.last_created_at <= $6");
                }
                if filter.visible_before.is_some() {
                    // Creation times grow with offsets, so the partition is
                    // visible when the segment at its cursor is old enough.
                    sql.push_str(
                        " AND (SELECT s.created_at FROM segments s WHERE s.partition_id = p.id \
                         AND s.base_offset <= CASE WHEN c.committed_offset IS NULL \
                         OR c.committed_offset < p.log_start THEN p.log_start ELSE c.committed_offset END \
                         ORDER BY s.base_offset DESC LIMIT 1) <= $7",
                    );
                }
                sql.push_str(" ORDER BY COALESCE(l.claimed_at, 0), p.id LIMIT $4");
                let rows: Vec<(i64, bool)> = sqlx::query_as(&sql)
                    .bind(filter.queue_id)
                    .bind(filter.group)
                    .bind(filter.now)
                    .bind(filter.limit)
                    .bind(filter.partition.unwrap_or(""))
                    .bind(filter.quiet_since.unwrap_or(0))
                    .bind(filter.visible_before.unwrap_or(0))
                    .fetch_all(self.reader())
                    .await?;
                Ok(rows)
            }

            /// The earliest time a live lease of the group on a partition
            /// with pending messages expires: when a waiting pop should look again.
            pub(crate) async fn next_expiry(
                &self,
                queue_id: i64,
                group: &str,
                now: i64,
            ) -> $crate::error::Result<Option<i64>> {
                let row: (Option<i64>,) = sqlx::query_as(
                    "SELECT MIN(l.expires_at) FROM consumer_leases l \
                     JOIN partitions p ON p.id = l.partition_id \
                     LEFT JOIN consumer_cursors c ON c.partition_id = l.partition_id AND c.consumer_group = $2 \
                     WHERE p.queue_id = $1 AND l.consumer_group = $2 AND l.expires_at > $3 \
                     AND p.next_offset > COALESCE(c.committed_offset, 0)",
                )
                .bind(queue_id)
                .bind(group)
                .bind(now)
                .fetch_one(self.reader())
                .await?;
                Ok(row.0)
            }

            /// Runs a pop in one write transaction.
            pub(crate) async fn pop(
                &self,
                job: &$crate::consume::pop::PopJob<'_>,
            ) -> $crate::error::Result<$crate::consume::PopOutcome> {
                let mut tx = self.begin_write().await?;
                let outcome = $crate::consume::pop::run(&mut $tx(&mut *tx), job).await?;
                tx.commit().await?;
                Ok(outcome)
            }

            /// Runs an ack request in one write transaction, partitions in
            /// ascending id order (so concurrent requests never deadlock).
            /// Also returns the queues where a lease was released.
            pub(crate) async fn ack(
                &self,
                group: &str,
                items: &[$crate::consume::AckItem],
                now: i64,
            ) -> $crate::error::Result<(Vec<$crate::consume::AckResult>, Vec<String>)> {
                let mut tx = self.begin_write().await?;
                let out = $crate::consume::ack::run(&mut $tx(&mut *tx), group, items, now).await?;
                tx.commit().await?;
                Ok(out)
            }

            /// Extends the live leases named `lease_id` to at least `until`.
            pub(crate) async fn extend_lease(
                &self,
                lease_id: &str,
                until: i64,
                now: i64,
            ) -> $crate::error::Result<$crate::consume::LeaseExtension> {
                let mut tx = self.begin_write().await?;
                let rows: Vec<(i64,)> = sqlx::query_as(
                    "UPDATE consumer_leases SET expires_at = \
                     CASE WHEN expires_at < $2 THEN $2 ELSE expires_at END \
                     WHERE lease_id = $1 AND expires_at > $3 RETURNING expires_at",
                )
                .bind(lease_id)
                .bind(until)
                .bind(now)
                .fetch_all(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok($crate::consume::LeaseExtension {
                    renewed: rows.len(),
                    expires_at_ms: rows.iter().map(|(e,)| *e).min(),
                })
            }

            /// Every stored position, optionally of one group and one queue.
            pub(crate) async fn positions(
                &self,
                group: Option<&str>,
                queue: Option<&str>,
                now: i64,
            ) -> $crate::error::Result<Vec<$crate::consume::GroupPosition>> {
                let rows: Vec<PositionTuple> = sqlx::query_as(
                    "SELECT c.consumer_group, q.name, p.name, p.id, c.committed_offset, p.next_offset, \
                     p.log_start, c.retry_count, c.updated_at, l.expires_at, l.span_end, \
                     (SELECT s.created_at FROM segments s WHERE s.partition_id = p.id \
                      AND s.base_offset <= CASE WHEN c.committed_offset < p.log_start THEN p.log_start \
                      ELSE c.committed_offset END ORDER BY s.base_offset DESC LIMIT 1) \
                     FROM consumer_cursors c JOIN partitions p ON p.id = c.partition_id \
                     JOIN queues q ON q.id = p.queue_id \
                     LEFT JOIN consumer_leases l ON l.partition_id = c.partition_id \
                     AND l.consumer_group = c.consumer_group \
                     WHERE ($1 = '' OR c.consumer_group = $1) AND ($2 = '' OR q.name = $2) \
                     ORDER BY c.consumer_group, q.name, p.kafka_index",
                )
                .bind(group.unwrap_or(""))
                .bind(queue.unwrap_or(""))
                .fetch_all(self.reader())
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|r| $crate::consume::sql::position(r, now))
                    .collect())
            }

            /// Every stored subscription, optionally of one group.
            pub(crate) async fn subscriptions(
                &self,
                group: Option<&str>,
            ) -> $crate::error::Result<Vec<$crate::consume::Subscription>> {
                let rows: Vec<(String, String, String, Option<i64>, i64)> = sqlx::query_as(
                    "SELECT s.consumer_group, q.name, s.mode, s.start_at, s.created_at \
                     FROM consumer_subscriptions s JOIN queues q ON q.id = s.queue_id \
                     WHERE ($1 = '' OR s.consumer_group = $1) ORDER BY s.consumer_group, q.name",
                )
                .bind(group.unwrap_or(""))
                .fetch_all(self.reader())
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(group, queue, mode, start_at_ms, created_at_ms)| {
                        $crate::consume::Subscription { group, queue, mode, start_at_ms, created_at_ms }
                    })
                    .collect())
            }

            /// Deletes a group's positions and leases (on one queue, or
            /// everywhere), and with `metadata` its subscriptions. Returns
            /// the number of positions deleted.
            pub(crate) async fn delete_group(
                &self,
                group: &str,
                queue: Option<&str>,
                metadata: bool,
            ) -> $crate::error::Result<u64> {
                let scope = "AND ($2 = '' OR partition_id IN (SELECT p.id FROM partitions p \
                             JOIN queues q ON q.id = p.queue_id WHERE q.name = $2))";
                let mut tx = self.begin_write().await?;
                sqlx::query(&format!("DELETE FROM consumer_leases WHERE consumer_group = $1 {scope}"))
                    .bind(group)
                    .bind(queue.unwrap_or(""))
                    .execute(&mut *tx)
                    .await?;
                let deleted = sqlx::query(&format!(
                    "DELETE FROM consumer_cursors WHERE consumer_group = $1 {scope}"
                ))
                .bind(group)
                .bind(queue.unwrap_or(""))
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if metadata {
                    sqlx::query(
                        "DELETE FROM consumer_subscriptions WHERE consumer_group = $1 \
                         AND ($2 = '' OR queue_id IN (SELECT id FROM queues WHERE name = $2))",
                    )
                    .bind(group)
                    .bind(queue.unwrap_or(""))
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(deleted)
            }

            /// Moves the group's position on every partition of the queue
            /// to the end (`at` = `None`) or to the first message created
            /// at or after `at`, and ends its leases there. `None` when the
            /// queue does not exist; otherwise the partitions updated.
            pub(crate) async fn seek(
                &self,
                group: &str,
                queue: &str,
                at: Option<i64>,
                now: i64,
            ) -> $crate::error::Result<Option<u64>> {
                let mut tx = self.begin_write().await?;
                let row: Option<(i64,)> = sqlx::query_as("SELECT id FROM queues WHERE name = $1")
                    .bind(queue)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some((queue_id,)) = row else { return Ok(None) };
                // Leases before positions: the order pops and acks lock them in.
                sqlx::query(
                    "UPDATE consumer_leases SET expires_at = 0 WHERE consumer_group = $2 \
                     AND partition_id IN (SELECT id FROM partitions WHERE queue_id = $1)",
                )
                .bind(queue_id)
                .bind(group)
                .execute(&mut *tx)
                .await?;
                let target = if at.is_some() {
                    "COALESCE((SELECT s.base_offset FROM segments s WHERE s.partition_id = p.id \
                     AND s.created_at >= $4 ORDER BY s.created_at, s.base_offset LIMIT 1), p.next_offset)"
                } else {
                    "p.next_offset"
                };
                let updated = sqlx::query(&format!(
                    "INSERT INTO consumer_cursors \
                     (partition_id, consumer_group, committed_offset, retry_count, created_at, updated_at) \
                     SELECT p.id, $2, {target}, 0, $3, $3 FROM partitions p WHERE p.queue_id = $1 \
                     ON CONFLICT (partition_id, consumer_group) DO UPDATE SET \
                     committed_offset = excluded.committed_offset, retry_count = 0, metadata = NULL, \
                     leader_epoch = NULL, updated_at = excluded.updated_at"
                ))
                .bind(queue_id)
                .bind(group)
                .bind(now)
                .bind(at.unwrap_or(0))
                .execute(&mut *tx)
                .await?
                .rows_affected();
                tx.commit().await?;
                Ok(Some(updated))
            }

            /// Rewrites the start time of the group's subscriptions.
            pub(crate) async fn set_subscription_start(
                &self,
                group: &str,
                at: i64,
            ) -> $crate::error::Result<u64> {
                let mut tx = self.begin_write().await?;
                let n = sqlx::query(
                    "UPDATE consumer_subscriptions SET start_at = $2, mode = 'from' WHERE consumer_group = $1",
                )
                .bind(group)
                .bind(at)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                tx.commit().await?;
                Ok(n)
            }

            /// Dead letters per partition of a queue (optionally of one group).
            pub(crate) async fn dead_letter_counts(
                &self,
                queue_id: i64,
                group: Option<&str>,
            ) -> $crate::error::Result<Vec<(i64, i64)>> {
                Ok(sqlx::query_as(
                    "SELECT partition_id, COUNT(*) FROM dead_letters WHERE queue_id = $1 \
                     AND ($2 = '' OR consumer_group = $2) GROUP BY partition_id",
                )
                .bind(queue_id)
                .bind(group.unwrap_or(""))
                .fetch_all(self.reader())
                .await?)
            }

            /// A page of a queue's dead letters, newest first, and how many match.
            pub(crate) async fn dead_letters(
                &self,
                query: &$crate::consume::DeadLetterQuery,
            ) -> $crate::error::Result<(Vec<$crate::consume::dlq::DeadLetterRow>, i64)> {
                let filter = "FROM dead_letters d JOIN partitions p ON p.id = d.partition_id \
                              JOIN queues q ON q.id = d.queue_id WHERE q.name = $1 \
                              AND ($2 = '' OR d.consumer_group = $2) AND ($3 = '' OR p.name = $3) \
                              AND d.failed_at >= $4 AND d.failed_at <= $5";
                let (total,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) {filter}"))
                    .bind(&query.queue)
                    .bind(query.group.as_deref().unwrap_or(""))
                    .bind(query.partition.as_deref().unwrap_or(""))
                    .bind(query.from_ms.unwrap_or(i64::MIN))
                    .bind(query.to_ms.unwrap_or(i64::MAX))
                    .fetch_one(self.reader())
                    .await?;
                let rows = sqlx::query_as(&format!(
                    "SELECT q.name, p.name, d.partition_id, d.consumer_group, d.message_offset, \
                     d.error_message, d.retry_count, d.message_created_at, d.failed_at, d.record \
                     {filter} ORDER BY d.failed_at DESC, d.id DESC LIMIT $6 OFFSET $7"
                ))
                .bind(&query.queue)
                .bind(query.group.as_deref().unwrap_or(""))
                .bind(query.partition.as_deref().unwrap_or(""))
                .bind(query.from_ms.unwrap_or(i64::MIN))
                .bind(query.to_ms.unwrap_or(i64::MAX))
                .bind(query.limit)
                .bind(query.offset)
                .fetch_all(self.reader())
                .await?;
                Ok((rows, total))
            }

            /// The dead letters of a transaction id in a partition.
            pub(crate) async fn dead_letters_of(
                &self,
                partition_id: i64,
                transaction_id: &str,
            ) -> $crate::error::Result<Vec<$crate::consume::dlq::DeadLetterRow>> {
                Ok(sqlx::query_as(
                    "SELECT q.name, p.name, d.partition_id, d.consumer_group, d.message_offset, \
                     d.error_message, d.retry_count, d.message_created_at, d.failed_at, d.record \
                     FROM dead_letters d JOIN partitions p ON p.id = d.partition_id \
                     JOIN queues q ON q.id = d.queue_id \
                     WHERE d.partition_id = $1 AND d.transaction_id = $2 ORDER BY d.id",
                )
                .bind(partition_id)
                .bind(transaction_id)
                .fetch_all(self.reader())
                .await?)
            }

            /// The queue and partition names of a partition id, with its offsets.
            pub(crate) async fn partition_ref(
                &self,
                partition_id: i64,
            ) -> $crate::error::Result<Option<(String, String, i64, i64)>> {
                Ok(sqlx::query_as(
                    "SELECT q.name, p.name, p.log_start, p.next_offset FROM partitions p \
                     JOIN queues q ON q.id = p.queue_id WHERE p.id = $1",
                )
                .bind(partition_id)
                .fetch_optional(self.reader())
                .await?)
            }
        }

        type PositionTuple = (
            String,
            String,
            String,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            Option<i64>,
            Option<i64>,
            Option<i64>,
        );
    };
}

pub(crate) use consume_statements;

use crate::consume::{CursorRow, GroupPosition, LeaseRow, PartitionState};
use crate::error::{Result, StorageError};
use crate::options::QueueOptions;

pub(crate) fn lease_row(
    (lease_id, expires_at, span_start, span_end, delivered_to, attempts): (
        Option<String>,
        i64,
        i64,
        i64,
        i64,
        i64,
    ),
) -> LeaseRow {
    LeaseRow {
        lease_id,
        expires_at,
        span_start,
        span_end,
        delivered_to,
        attempts,
    }
}

pub(crate) fn options(json: &str) -> Result<QueueOptions> {
    serde_json::from_str(json).map_err(|e| StorageError::Corrupt(format!("queue options: {e}")))
}

#[allow(clippy::type_complexity)]
pub(crate) fn partition_state(
    (queue_id, queue, partition, next_offset, log_start, options_json, committed, retry): (
        i64,
        String,
        String,
        i64,
        i64,
        String,
        Option<i64>,
        Option<i64>,
    ),
) -> Result<(PartitionState, Option<CursorRow>)> {
    let state = PartitionState {
        queue_id,
        queue,
        partition,
        next_offset,
        log_start,
        options: options(&options_json)?,
    };
    let cursor = committed.map(|committed_offset| CursorRow {
        committed_offset,
        retry_count: retry.unwrap_or(0),
    });
    Ok((state, cursor))
}

#[allow(clippy::type_complexity)]
pub(crate) fn position(
    (
        group,
        queue,
        partition,
        partition_id,
        committed_offset,
        next_offset,
        log_start,
        retry_count,
        updated_at_ms,
        expires_at,
        span_end,
        cursor_created_at,
    ): (
        String,
        String,
        String,
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
        Option<i64>,
        Option<i64>,
        Option<i64>,
    ),
    now: i64,
) -> GroupPosition {
    let live = expires_at.filter(|e| *e > now);
    let position = committed_offset.max(log_start);
    GroupPosition {
        group,
        queue,
        partition,
        partition_id,
        committed_offset,
        next_offset,
        log_start,
        retry_count,
        updated_at_ms,
        lease_expires_at_ms: live,
        leased_to: match live {
            Some(_) => span_end.unwrap_or(position).clamp(position, next_offset),
            None => position,
        },
        oldest_pending_at_ms: (position < next_offset)
            .then_some(cursor_created_at)
            .flatten(),
    }
}
