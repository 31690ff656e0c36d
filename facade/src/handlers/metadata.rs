//! Metadata: the live brokers, the controller, and the topics with their
//! partitions; unknown topics are created when the client and the broker
//! allow it.

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};
use storage::{BrokerInfo, QueueInfo};

use crate::broker::Broker;
use crate::error::storage_code;

/// Answers with brokers, cluster id, controller and the asked-for topics.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: MetadataRequest,
    listener: &str,
    access: &Access,
) -> MetadataResponse {
    let brokers = match broker.live_brokers(listener).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "kafka: cannot list brokers");
            Vec::new()
        }
    };
    let create = version < 4 || request.allow_auto_topic_creation;
    let cluster_operations =
        crate::authorized::cluster(request.include_cluster_authorized_operations, access);
    // v0 has no null list: an empty one means every topic.
    let wanted = match request.topics {
        Some(list) if !(version == 0 && list.is_empty()) => Some(list),
        _ => None,
    };
    let mut topics = Vec::new();
    match wanted {
        None => match broker.engine.queues().await {
            // Only the topics the principal may describe, as Kafka lists them.
            Ok(all) => topics.extend(
                all.iter()
                    .filter(|q| access.topic(AclOperation::Describe, &q.name))
                    .map(|q| topic_answer(version, &brokers, q)),
            ),
            Err(e) => tracing::warn!(error = %e, "kafka: cannot list topics"),
        },
        Some(list) => {
            for t in list {
                let name = match (&t.name, version >= 10 && !t.topic_id.is_nil()) {
                    (Some(name), _) => Some(name.to_string()),
                    (None, true) => broker.topic_name(t.topic_id).await.ok().flatten(),
                    (None, false) => None,
                };
                let Some(name) = name else {
                    let mut missing = MetadataResponseTopic::default()
                        .with_error_code(ResponseError::UnknownTopicId.code())
                        .with_name(None);
                    if version >= 10 {
                        missing.topic_id = t.topic_id;
                    }
                    topics.push(missing);
                    continue;
                };
                if !access.topic(AclOperation::Describe, &name) {
                    topics.push(error_topic(
                        &name,
                        ResponseError::TopicAuthorizationFailed.code(),
                    ));
                    continue;
                }
                // Creating an unknown topic needs CREATE on the cluster or it.
                let create = create
                    && (access.cluster(AclOperation::Create)
                        || access.topic(AclOperation::Create, &name));
                topics.push(match broker.topic(&name, create).await {
                    Ok(Some(q)) => topic_answer(version, &brokers, &q),
                    Ok(None) => error_topic(&name, ResponseError::UnknownTopicOrPartition.code()),
                    Err(
                        storage::StorageError::InvalidInput(_)
                        | storage::StorageError::NameTooLong { .. },
                    ) => error_topic(&name, ResponseError::InvalidTopicException.code()),
                    Err(e) => error_topic(&name, storage_code(&e)),
                });
            }
        }
    }

    for topic in topics.iter_mut().filter(|t| t.error_code == 0) {
        let name = topic.name.as_deref().map_or("", |n| n.as_str());
        topic.topic_authorized_operations =
            crate::authorized::topic(request.include_topic_authorized_operations, access, name);
    }
    let mut answer = MetadataResponse::default()
        .with_brokers(brokers.iter().map(|b| broker_answer(version, b)).collect())
        .with_topics(topics)
        .with_cluster_authorized_operations(cluster_operations);
    if version >= 1 {
        answer.controller_id = BrokerId(brokers.first().map_or(broker.node_id, |b| b.id));
    }
    if version >= 2 {
        answer.cluster_id = Some(StrBytes::from_string(broker.cluster_id.clone()));
    }
    answer
}

fn broker_answer(_version: i16, b: &BrokerInfo) -> MetadataResponseBroker {
    MetadataResponseBroker::default()
        .with_node_id(BrokerId(b.id))
        .with_host(StrBytes::from_string(b.host.clone()))
        .with_port(b.port)
}

fn error_topic(name: &str, code: i16) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_error_code(code)
        .with_name(Some(TopicName(StrBytes::from_string(name.to_owned()))))
}

fn topic_answer(version: i16, brokers: &[BrokerInfo], q: &QueueInfo) -> MetadataResponseTopic {
    let partitions = q
        .partitions
        .iter()
        .map(|p| {
            let leader = Broker::leader(brokers, &q.name, p.kafka_index);
            let mut answer = MetadataResponsePartition::default()
                .with_partition_index(p.kafka_index)
                .with_leader_id(BrokerId(leader))
                .with_replica_nodes(vec![BrokerId(leader)])
                .with_isr_nodes(vec![BrokerId(leader)]);
            if version >= 7 {
                answer.leader_epoch = 0;
            }
            answer
        })
        .collect();
    let mut answer = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(q.name.clone()))))
        .with_partitions(partitions);
    if version >= 1 {
        answer.is_internal = storage::offsets_log::is_internal(&q.name);
    }
    if version >= 10 {
        answer.topic_id = q.topic_id;
    }
    answer
}
