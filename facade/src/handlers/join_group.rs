//! JoinGroup: a member enters a group or rejoins it for a rebalance; the
//! answer waits until the rebalance completes (as Kafka's does), and the
//! leader's carries every member's subscription.

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;
use storage::Access;

use super::Caller;
use crate::broker::Broker;
use crate::error::code;
use crate::groups::{JoinAnswer, JoinRequest};

/// Joins `caller` to the group and answers once it may go on to SyncGroup.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: JoinGroupRequest,
    caller: Caller,
    access: &Access,
) -> JoinGroupResponse {
    let group = request.group_id.to_string();
    let answer = match broker.member_error(access, &group).await {
        Some(error) => JoinAnswer::error(error, &request.member_id),
        None => {
            let join = JoinRequest {
                member_id: request.member_id.to_string(),
                instance_id: request.group_instance_id.as_ref().map(|i| i.to_string()),
                client_id: caller.client_id,
                client_host: caller.host,
                session_timeout_ms: request.session_timeout_ms,
                // v0 has no rebalance timeout: it is the session timeout.
                rebalance_timeout_ms: if version >= 1 {
                    request.rebalance_timeout_ms
                } else {
                    request.session_timeout_ms
                },
                protocol_type: request.protocol_type.to_string(),
                protocols: request
                    .protocols
                    .into_iter()
                    .map(|p| (p.name.to_string(), p.metadata))
                    .collect(),
                require_known_member_id: version >= 4,
            };
            broker.groups.join(&group, join).await
        }
    };
    response(version, answer)
}

/// The answer as JoinGroup `version` can carry it.
fn response(version: i16, mut answer: JoinAnswer) -> JoinGroupResponse {
    // Before v7 the protocol name is not nullable.
    if version < 7 && answer.protocol.is_none() {
        answer.protocol = Some(String::new());
    }
    JoinGroupResponse::default()
        .with_error_code(code(answer.error))
        .with_generation_id(answer.generation)
        .with_protocol_type(answer.protocol_type.map(StrBytes::from_string))
        .with_protocol_name(answer.protocol.map(StrBytes::from_string))
        .with_leader(StrBytes::from_string(answer.leader))
        // Before v9 a static leader rejoining a stable group computes an
        // assignment that SyncGroup then ignores, as Kafka does.
        .with_skip_assignment(version >= 9 && answer.skip_assignment)
        .with_member_id(StrBytes::from_string(answer.member_id))
        .with_members(
            answer
                .members
                .into_iter()
                .map(|(id, instance, metadata)| {
                    JoinGroupResponseMember::default()
                        .with_member_id(StrBytes::from_string(id))
                        .with_group_instance_id(instance.map(StrBytes::from_string))
                        .with_metadata(metadata)
                })
                .collect(),
        )
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::protocol::Encodable;

    use super::*;

    #[test]
    fn every_answer_encodes_at_every_version() {
        let full = JoinAnswer {
            error: None,
            generation: 3,
            protocol_type: Some("consumer".into()),
            protocol: Some("range".into()),
            leader: "m-1".into(),
            member_id: "m-1".into(),
            members: vec![(
                "m-1".into(),
                Some("static-1".into()),
                Bytes::from_static(b"meta"),
            )],
            skip_assignment: true,
        };
        let failed = JoinAnswer::error(kafka_protocol::ResponseError::MemberIdRequired, "m-2");
        for version in 0..=9 {
            for answer in [full.clone(), failed.clone()] {
                response(version, answer)
                    .encode(&mut BytesMut::new(), version)
                    .unwrap_or_else(|e| panic!("JoinGroup v{version}: {e}"));
            }
        }
    }
}
