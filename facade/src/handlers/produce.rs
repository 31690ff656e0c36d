//! Produce: record batches become messages with minted transaction ids,
//! appended per partition and committed before the answer (whatever `acks`
//! asks, the append is durable when it is acknowledged).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use storage::{Access, AclOperation, ResourceType};

use bytes::Bytes;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Content, PartitionId, StorageError};
use telemetry::{Door, TRAFFIC};

use crate::broker::Broker;
use crate::error::storage_code;
use crate::metrics::KAFKA;
use crate::records::{decode, BatchError, Decoded};

/// A partition's answer in the making: (index, error code, base offset,
/// log append time or -1), and why it was refused when that has words.
type Slot = (i32, i16, i64, i64, Option<Refusal>);

/// Why a partition's records were refused, in words (Produce v8+ carries
/// them): a message, and the records at fault by their index.
#[derive(Debug)]
struct Refusal {
    message: String,
    records: Vec<(i32, String)>,
}

/// The answer to a produce, once its appends have committed.
pub(super) type Completion = Pin<Box<dyn Future<Output = Option<ProduceResponse>> + Send>>;

/// Decodes every partition's batches and queues their appends, in request
/// order, before returning; the returned future waits for the commits and
/// yields the answer (`None` for `acks = 0`). Queuing before the next request
/// is read keeps a connection's pipelined produces in order.
pub(super) async fn handle(
    broker: &Arc<Broker>,
    version: i16,
    request: ProduceRequest,
    access: &Access,
) -> Completion {
    let mut pending = Vec::new();
    let mut answers: Vec<(TopicProduceResponse, Vec<Slot>)> = Vec::new();
    // A transactional produce needs WRITE on its transactional id too.
    let txn_denied = request
        .transactional_id
        .as_deref()
        .is_some_and(|id| !access.allows(AclOperation::Write, ResourceType::TransactionalId, id));
    for (t, topic) in request.topic_data.into_iter().enumerate() {
        let name = if version >= 13 {
            broker.topic_name(topic.topic_id).await.ok().flatten()
        } else {
            Some(topic.name.to_string())
        };
        let mut header = TopicProduceResponse::default();
        if version >= 13 {
            header.topic_id = topic.topic_id;
        } else {
            header.name = topic.name.clone();
        }
        let mut partitions = Vec::new();
        for (p, data) in topic.partition_data.into_iter().enumerate() {
            partitions.push((data.index, 0, -1, -1, None));
            let Some(name) = name.clone() else {
                partitions[p].1 = ResponseError::UnknownTopicId.code();
                continue;
            };
            if txn_denied {
                partitions[p].1 = ResponseError::TransactionalIdAuthorizationFailed.code();
                continue;
            }
            if !access.topic(AclOperation::Write, &name) {
                partitions[p].1 = ResponseError::TopicAuthorizationFailed.code();
                continue;
            }
            let records = data.records.unwrap_or_default();
            // Kafka takes message sets (magic 0 and 1) only from Produce v0–v2.
            if version >= 3 && crate::legacy::message_set::is_message_set(&records) {
                partitions[p].1 = ResponseError::InvalidRecord.code();
                continue;
            }
            let size = records.len();
            let queued = match prepare(broker, &name, data.index, records).await {
                Ok((partition_id, batch, appended_at)) => {
                    partitions[p].3 = appended_at.unwrap_or(-1);
                    received(size, batch.records.len());
                    broker
                        .engine
                        .start_append(&name, partition_id, batch.records, batch.producer)
                        .await
                        .map_err(|e| (append_code(&e), None))
                }
                Err(refused) => Err(refused),
            };
            match queued {
                Ok(append) => pending.push(((t, p), append)),
                Err((code, refusal)) => {
                    partitions[p].1 = code;
                    partitions[p].4 = refusal.filter(|_| version >= 8);
                }
            }
        }
        answers.push((header, partitions));
    }
    let acks = request.acks;
    Box::pin(async move {
        for ((t, p), append) in pending {
            let slot = &mut answers[t].1[p];
            match append.offset().await {
                Ok(base_offset) => slot.2 = base_offset,
                Err(e) => slot.1 = append_code(&e),
            }
        }
        (acks != 0).then(|| answer(answers))
    })
}

/// Counts an accepted partition batch: once per batch, never per record.
fn received(bytes: usize, records: usize) {
    let traffic = TRAFFIC.door(Door::Kafka);
    traffic.records_in.inc_by(records as u64);
    traffic.bytes_in.inc_by(bytes as u64);
    traffic.batch_records.observe(records as f64);
    traffic.batch_bytes.observe(bytes as f64);
}

fn answer(answers: Vec<(TopicProduceResponse, Vec<Slot>)>) -> ProduceResponse {
    let responses = answers
        .into_iter()
        .map(|(header, partitions)| {
            header.with_partition_responses(
                partitions
                    .into_iter()
                    .map(|(index, error_code, base_offset, appended_at, refusal)| {
                        KAFKA.partition_error(ApiKey::Produce, error_code);
                        let mut answer = PartitionProduceResponse::default()
                            .with_index(index)
                            .with_error_code(error_code)
                            .with_base_offset(base_offset)
                            .with_log_append_time_ms(appended_at);
                        if let Some(refusal) = refusal {
                            answer.error_message = Some(StrBytes::from_string(refusal.message));
                            answer.record_errors = refusal
                                .records
                                .into_iter()
                                .map(|(i, message)| {
                                    BatchIndexAndErrorMessage::default()
                                        .with_batch_index(i)
                                        .with_batch_index_error_message(Some(
                                            StrBytes::from_string(message),
                                        ))
                                })
                                .collect();
                        }
                        answer
                    })
                    .collect(),
            )
        })
        .collect();
    ProduceResponse::default().with_responses(responses)
}

/// The error code of a refused append. A fenced transactional producer's
/// batch is `INVALID_PRODUCER_EPOCH`, never `PRODUCER_FENCED`: Kafka's
/// Produce answers only the former, which clients take as fatal for a
/// transactional producer (the coordinator APIs say `PRODUCER_FENCED`).
fn append_code(e: &StorageError) -> i16 {
    let code = storage_code(e);
    if code == ResponseError::ProducerFenced.code() {
        ResponseError::InvalidProducerEpoch.code()
    } else {
        code
    }
}

/// Decodes the records and resolves the partition (creating the topic if
/// allowed; a refused batch creates nothing), or says which error code the
/// partition gets (with words for the topic's own rules). The topic's
/// rules (`max.message.bytes`, keys on a compacted topic, LogAppendTime)
/// come from the broker's cache of them: no catalog read per produce. On
/// a LogAppendTime topic every record takes the broker's time, which the
/// answer reports (Kafka's `log_append_time_ms`).
async fn prepare(
    broker: &Broker,
    topic: &str,
    index: i32,
    records: Bytes,
) -> Result<(PartitionId, Decoded, Option<i64>), (i16, Option<Refusal>)> {
    let code = |code: i16| (code, None);
    if storage::offsets_log::is_internal(topic) {
        // Kafka: "Cannot append to internal topic"; only the broker writes it.
        return Err((
            ResponseError::InvalidTopicException.code(),
            Some(Refusal {
                message: format!("Cannot append to internal topic {topic}"),
                records: Vec::new(),
            }),
        ));
    }
    let rules = broker
        .produce_rules(topic)
        .await
        .map_err(|e| code(storage_code(&e)))?;
    if records.len() > rules.max_message_bytes {
        let message = format!(
            "the batch is {} bytes; topic {topic} takes at most {} (max.message.bytes)",
            records.len(),
            rules.max_message_bytes
        );
        return Err((
            ResponseError::MessageTooLarge.code(),
            Some(Refusal {
                message,
                records: Vec::new(),
            }),
        ));
    }
    let mut batch = decode(records, broker.config.max_decompressed_bytes).map_err(|e| {
        tracing::debug!(topic, index, error = %e, "kafka: produce refused");
        code(match e {
            BatchError::Corrupt(_) => ResponseError::CorruptMessage.code(),
            BatchError::UnsupportedMagic(_) => ResponseError::UnsupportedForMessageFormat.code(),
            BatchError::TooLarge(_) => ResponseError::MessageTooLarge.code(),
            BatchError::Invalid(_) => ResponseError::InvalidRecord.code(),
        })
    })?;
    if batch.records.is_empty() {
        return Err(code(ResponseError::InvalidRecord.code()));
    }
    if rules.key_required {
        let message = format!(
            "Compacted topic cannot accept message without key in topic partition {topic}-{index}."
        );
        let keyless: Vec<(i32, String)> = batch
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(&r.content, Content::Kafka(k) if k.key.is_none()))
            .map(|(i, _)| (i as i32, message.clone()))
            .collect();
        if !keyless.is_empty() {
            return Err((
                ResponseError::InvalidRecord.code(),
                Some(Refusal {
                    message,
                    records: keyless,
                }),
            ));
        }
    }
    let appended_at = rules
        .log_append_time
        .then(|| broker.engine.clock().now_ms());
    if let Some(now) = appended_at {
        for record in &mut batch.records {
            if let Content::Kafka(k) = &mut record.content {
                k.timestamp_ms = now;
            }
        }
    }
    let partition_id = match broker.partition_id(topic, index, true).await {
        Ok(Some(id)) => id,
        Ok(None) => return Err(code(ResponseError::UnknownTopicOrPartition.code())),
        Err(StorageError::InvalidInput(_) | StorageError::NameTooLong { .. }) => {
            return Err(code(ResponseError::InvalidTopicException.code()))
        }
        Err(e) => return Err(code(storage_code(&e))),
    };
    Ok((partition_id, batch, appended_at))
}
