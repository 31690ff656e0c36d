//! Kafka's (topic id, partition index) resolved to the native partition a
//! share group pops and acknowledges.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use kafka_protocol::ResponseError;
use storage::{Access, AclOperation, PartitionId, QueueInfo};
use uuid::Uuid;

use crate::broker::Broker;

/// A partition as the engine names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The queue (topic name).
    pub(crate) queue: String,
    /// The partition name.
    pub(crate) partition: String,
    /// The partition id.
    pub(crate) id: PartitionId,
}

/// Resolves partitions, reading each topic once per request.
#[derive(Debug, Default)]
pub(crate) struct Targets {
    topics: HashMap<Uuid, Result<QueueInfo, ResponseError>>,
}

impl Targets {
    /// The partition `index` of topic `topic_id`, or the error its
    /// partition answers: `UNKNOWN_TOPIC_ID`, `TOPIC_AUTHORIZATION_FAILED`
    /// (READ is needed), `UNKNOWN_TOPIC_OR_PARTITION`.
    pub(crate) async fn resolve(
        &mut self,
        broker: &Broker,
        access: &Access,
        topic_id: Uuid,
        index: i32,
    ) -> Result<Target, ResponseError> {
        if let Entry::Vacant(slot) = self.topics.entry(topic_id) {
            slot.insert(topic(broker, access, topic_id).await);
        }
        let info = match self.topics.get(&topic_id) {
            Some(Ok(info)) => info,
            Some(Err(e)) => return Err(*e),
            None => return Err(ResponseError::UnknownTopicId),
        };
        info.partitions
            .iter()
            .find(|p| p.kafka_index == index)
            .map(|p| Target {
                queue: info.name.clone(),
                partition: p.name.clone(),
                id: p.id,
            })
            .ok_or(ResponseError::UnknownTopicOrPartition)
    }
}

async fn topic(
    broker: &Broker,
    access: &Access,
    topic_id: Uuid,
) -> Result<QueueInfo, ResponseError> {
    let failed = |e: storage::StorageError| {
        tracing::warn!(error = %e, "kafka share fetch: reading the topic failed");
        ResponseError::UnknownServerError
    };
    let name = broker
        .topic_name(topic_id)
        .await
        .map_err(failed)?
        .ok_or(ResponseError::UnknownTopicId)?;
    if !access.topic(AclOperation::Read, &name) {
        return Err(ResponseError::TopicAuthorizationFailed);
    }
    broker
        .engine
        .queue(&name)
        .await
        .map_err(failed)?
        .ok_or(ResponseError::UnknownTopicId)
}
