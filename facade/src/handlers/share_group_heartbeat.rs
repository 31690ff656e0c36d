//! ShareGroupHeartbeat (KIP-932): a share group member joins (epoch 0)
//! with its subscription, keeps its session at the epoch it was given,
//! or leaves (epoch -1, releasing what it acquired). Every member is
//! assigned every partition of the topics it subscribes to: the native
//! leases decide who gets which records.

use std::collections::BTreeSet;

use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::groups::share::{Heartbeat, HeartbeatAnswer};
use crate::handlers::Caller;

/// Answers one heartbeat.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: ShareGroupHeartbeatRequest,
    caller: Caller,
    access: &Access,
) -> ShareGroupHeartbeatResponse {
    let group = request.group_id.to_string();
    let mut answer = match broker.member_error(access, &group).await {
        Some(error) => HeartbeatAnswer::error(error, error.to_string()),
        None => match checked(&request, caller) {
            Err(why) => HeartbeatAnswer::error(ResponseError::InvalidRequest, why),
            Ok(_) if broker.groups.is_other_than_share(&group) => HeartbeatAnswer::error(
                ResponseError::GroupIdNotFound,
                format!("group {group} is not a share group"),
            ),
            Ok(heartbeat) => {
                let session_ms = broker.groups.share_session_ms();
                broker.groups.share.heartbeat(&group, heartbeat, session_ms)
            }
        },
    };
    let released = std::mem::take(&mut answer.released);
    crate::share::release::release(broker, &group, released).await;
    if let Some(error) = answer.error {
        tracing::debug!(
            group,
            member = %request.member_id,
            epoch = request.member_epoch,
            ?error,
            "kafka share group: heartbeat refused"
        );
        return ShareGroupHeartbeatResponse::default()
            .with_error_code(error.code())
            .with_error_message(answer.message.map(StrBytes::from_string))
            .with_member_epoch(answer.epoch);
    }
    let assignment = if answer.epoch < 0 {
        None
    } else {
        Some(assignment(broker, &answer.topics, access).await)
    };
    ShareGroupHeartbeatResponse::default()
        .with_member_id(Some(StrBytes::from_string(answer.member_id)))
        .with_member_epoch(answer.epoch)
        .with_heartbeat_interval_ms(broker.groups.consumer_heartbeat_ms())
        .with_assignment(assignment)
}

/// The request as the group takes it, or why it is invalid.
fn checked(request: &ShareGroupHeartbeatRequest, caller: Caller) -> Result<Heartbeat, String> {
    let epoch = request.member_epoch;
    if epoch < -1 {
        return Err("member epoch below -1".into());
    }
    if request.member_id.is_empty() {
        return Err("member id is empty".into());
    }
    let topics: Option<BTreeSet<String>> = request
        .subscribed_topic_names
        .as_ref()
        .map(|names| names.iter().map(|n| n.to_string()).collect());
    if epoch == 0 && topics.as_ref().is_none_or(BTreeSet::is_empty) {
        return Err("a joining member must give its subscribed topic names".into());
    }
    Ok(Heartbeat {
        member_id: request.member_id.to_string(),
        epoch,
        rack_id: request.rack_id.as_ref().map(|r| r.to_string()),
        topics,
        client_id: caller.client_id,
        client_host: caller.host,
    })
}

/// Every partition of the subscribed topics that exist and that the
/// principal may describe.
async fn assignment(broker: &Broker, topics: &BTreeSet<String>, access: &Access) -> Assignment {
    let visible: Vec<&String> = topics
        .iter()
        .filter(|name| access.topic(AclOperation::Describe, name))
        .collect();
    let out = crate::share::subscribed(broker, visible)
        .await
        .into_iter()
        .map(|q| {
            TopicPartitions::default()
                .with_topic_id(q.topic_id)
                .with_partitions(q.partitions.iter().map(|p| p.kafka_index).collect())
        })
        .collect();
    Assignment::default().with_topic_partitions(out)
}
