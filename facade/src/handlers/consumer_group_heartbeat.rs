//! ConsumerGroupHeartbeat (KIP-848): a member of a consumer group joins,
//! keeps its session, reports what it owns and receives its assignment;
//! epoch -1 leaves. The request is checked here, the rules are the group's
//! (`groups::consumer`).

use std::collections::BTreeSet;

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};
use uuid::Uuid;

use crate::broker::Broker;
use crate::groups::consumer::{
    Heartbeat, HeartbeatAnswer, Subscription, Topic, TopicPartition, Topics, ASSIGNORS,
};
use crate::handlers::Caller;

/// Answers one heartbeat.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: ConsumerGroupHeartbeatRequest,
    caller: Caller,
    access: &Access,
) -> ConsumerGroupHeartbeatResponse {
    let group = request.group_id.to_string();
    let answer = match broker.member_error(access, &group).await {
        Some(error) => HeartbeatAnswer::error(error, error.to_string()),
        None => match checked(version, &request, caller) {
            Err((error, why)) => HeartbeatAnswer::error(error, why),
            Ok(heartbeat) => match topics(broker, &group, &heartbeat, access).await {
                Err(error) => HeartbeatAnswer::error(error, error.to_string()),
                Ok(topics) => broker.groups.consumer_heartbeat(&group, heartbeat, topics),
            },
        },
    };
    if answer.error.is_some() {
        tracing::debug!(
            group,
            member = %request.member_id,
            epoch = request.member_epoch,
            error = ?answer.error,
            message = answer.message.as_deref().unwrap_or(""),
            "kafka consumer group: heartbeat refused"
        );
    }
    respond(broker, answer)
}

/// The request as the group takes it, or why it is refused.
fn checked(
    version: i16,
    request: &ConsumerGroupHeartbeatRequest,
    caller: Caller,
) -> Result<Heartbeat, (ResponseError, String)> {
    let invalid = |why: &str| Err((ResponseError::InvalidRequest, why.to_owned()));
    let epoch = request.member_epoch;
    if epoch < -2 {
        return invalid("member epoch below -2");
    }
    let mut member_id = request.member_id.to_string();
    if member_id.is_empty() {
        // v0 members are named by the coordinator on joining; from v1
        // the client names itself.
        if epoch != 0 || version >= 1 {
            return invalid("member id is empty");
        }
        member_id = Uuid::new_v4().to_string();
    }
    // An empty expression is none (librdkafka sends one with topic names).
    let regex = match request.subscribed_topic_regex.as_deref() {
        None => None,
        Some("") => Some(None),
        Some(pattern) => match Subscription::new(pattern) {
            Ok(r) => Some(Some(r)),
            Err(why) => return Err((ResponseError::InvalidRegularExpression, why)),
        },
    };
    let topics: Option<BTreeSet<String>> = request
        .subscribed_topic_names
        .as_ref()
        .map(|names| names.iter().map(|n| n.to_string()).collect());
    if epoch == 0 && topics.is_none() && !matches!(regex, Some(Some(_))) {
        return invalid("a joining member must give its subscribed topic names or expression");
    }
    if epoch == 0 && request.rebalance_timeout_ms < 0 {
        return invalid("a joining member must give its rebalance timeout");
    }
    let assignor = request.server_assignor.as_ref().map(|a| a.to_string());
    if let Some(name) = &assignor {
        if !ASSIGNORS.contains(&name.as_str()) {
            return Err((
                ResponseError::UnsupportedAssignor,
                format!("assignor {name} is not one of {}", ASSIGNORS.join(", ")),
            ));
        }
    }
    let owned: Option<BTreeSet<TopicPartition>> = request.topic_partitions.as_ref().map(|tps| {
        tps.iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
            .collect()
    });
    Ok(Heartbeat {
        member_id,
        epoch,
        instance_id: request.instance_id.as_ref().map(|i| i.to_string()),
        rack_id: request.rack_id.as_ref().map(|r| r.to_string()),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        topics,
        regex,
        assignor,
        owned,
        client_id: caller.client_id,
        client_host: caller.host,
    })
}

/// The topics the group's members and this member subscribe to, as they
/// exist now (missing ones and ones the principal may not read are left
/// out: nothing is assigned from them).
async fn topics(
    broker: &Broker,
    group: &str,
    heartbeat: &Heartbeat,
    access: &Access,
) -> Result<Topics, ResponseError> {
    let failed = |e: storage::StorageError| {
        tracing::warn!(error = %e, "kafka consumer group: reading topics failed");
        ResponseError::CoordinatorNotAvailable
    };
    let mut names = broker.groups.consumer.subscriptions(group);
    if let Some(mine) = &heartbeat.topics {
        names.extend(mine.iter().cloned());
    }
    let mut regexes = broker.groups.consumer.regexes(group);
    if let Some(Some(mine)) = &heartbeat.regex {
        regexes.push(mine.clone());
    }
    if !regexes.is_empty() {
        // Every topic is a candidate, as every queue is one in Metadata.
        let all = broker.engine.queues().await.map_err(failed)?;
        names.extend(
            all.into_iter()
                .map(|q| q.name)
                .filter(|n| regexes.iter().any(|r| r.matches(n))),
        );
    }
    let mut topics = Topics::new();
    for name in names {
        if !access.topic(AclOperation::Describe, &name) {
            continue;
        }
        let queue = broker.engine.queue(&name).await.map_err(failed)?;
        if let Some(q) = queue {
            let partitions = q.partitions.iter().map(|p| p.kafka_index).collect();
            topics.insert(
                name,
                Topic {
                    id: q.topic_id,
                    partitions,
                },
            );
        }
    }
    Ok(topics)
}

fn respond(broker: &Broker, answer: HeartbeatAnswer) -> ConsumerGroupHeartbeatResponse {
    let response = ConsumerGroupHeartbeatResponse::default()
        .with_error_code(answer.error.map_or(0, |e| e.code()))
        .with_error_message(answer.message.map(StrBytes::from_string))
        .with_heartbeat_interval_ms(broker.groups.consumer_heartbeat_ms());
    if answer.error.is_some() {
        return response.with_member_epoch(answer.epoch);
    }
    let assignment = answer.assignment.map(|tps| {
        let mut by_topic: Vec<TopicPartitions> = Vec::new();
        for (topic, partition) in tps {
            match by_topic.last_mut() {
                Some(t) if t.topic_id == topic => t.partitions.push(partition),
                _ => by_topic.push(
                    TopicPartitions::default()
                        .with_topic_id(topic)
                        .with_partitions(vec![partition]),
                ),
            }
        }
        Assignment::default().with_topic_partitions(by_topic)
    });
    response
        .with_member_id(Some(StrBytes::from_string(answer.member_id)))
        .with_member_epoch(answer.epoch)
        .with_assignment(assignment)
}
