//! ShareAcknowledge (KIP-932): acknowledges a member's acquired records
//! without fetching more, within its share session: the epoch must be the
//! session's next (0 cannot open one here), and -1 closes the session
//! after the acknowledgements, releasing what the member still holds.
//! Records not held by the member are `INVALID_RECORD_STATE` for their
//! partition, and nothing of that partition is acknowledged.

use kafka_protocol::messages::share_acknowledge_response::{
    LeaderIdAndEpoch, PartitionData, ShareAcknowledgeTopicResponse,
};
use kafka_protocol::messages::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::Access;

use crate::broker::Broker;
use crate::share::acknowledge::{self, Batch};
use crate::share::config;
use crate::share::release::release;
use crate::share::target::Targets;

/// Answers one ShareAcknowledge.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: ShareAcknowledgeRequest,
    access: &Access,
) -> ShareAcknowledgeResponse {
    match serve(broker, request, access).await {
        Ok(response) => response,
        Err((error, why)) => ShareAcknowledgeResponse::default()
            .with_error_code(error.code())
            .with_error_message(Some(StrBytes::from_string(why))),
    }
}

async fn serve(
    broker: &Broker,
    request: ShareAcknowledgeRequest,
    access: &Access,
) -> Result<ShareAcknowledgeResponse, (ResponseError, String)> {
    let (group, member) = crate::share::identify(
        broker,
        access,
        request.group_id.as_ref().map(|g| g.as_str()),
        request.member_id.as_ref().map(|m| m.as_str()),
    )
    .await?;
    // Every batch is checked before anything changes.
    let mut parts = Vec::new();
    for t in &request.topics {
        for p in &t.partitions {
            let list: Vec<Batch<'_>> = p
                .acknowledgement_batches
                .iter()
                .map(|b| (b.first_offset, b.last_offset, &b.acknowledge_types[..]))
                .collect();
            let offsets = acknowledge::expand_partition(p.partition_index, &list)?;
            parts.push((t.topic_id, p.partition_index, offsets));
        }
    }
    let epoch = request.share_session_epoch;
    let share = &broker.groups.share;
    share
        .with_member(&group, &member, |m, _| match epoch {
            0 => Err(ResponseError::InvalidShareSessionEpoch),
            -1 => m.has_session(),
            e => m.advance_session(e).map(|_| ()),
        })
        .map_err(|e| {
            (
                e,
                format!("share session of member {member} at epoch {epoch}: {e}"),
            )
        })?;
    let config = config::load(&broker.engine, &group)
        .await
        .map_err(|e| (ResponseError::UnknownServerError, e.to_string()))?;

    let mut targets = Targets::default();
    let mut responses: Vec<ShareAcknowledgeTopicResponse> = Vec::new();
    for (topic_id, index, offsets) in parts {
        let code = match targets.resolve(broker, access, topic_id, index).await {
            Err(e) => e.code(),
            Ok(target) => {
                match acknowledge::acknowledge(
                    broker, &group, &member, target.id, &offsets, &config,
                )
                .await
                {
                    Ok(()) => 0,
                    Err(e) => e.code(),
                }
            }
        };
        let data = PartitionData::default()
            .with_partition_index(index)
            .with_error_code(code)
            .with_current_leader(
                LeaderIdAndEpoch::default()
                    .with_leader_id(broker.node_id)
                    .with_leader_epoch(0),
            );
        match responses.last_mut() {
            Some(t) if t.topic_id == topic_id => t.partitions.push(data),
            _ => responses.push(
                ShareAcknowledgeTopicResponse::default()
                    .with_topic_id(topic_id)
                    .with_partitions(vec![data]),
            ),
        }
    }
    if epoch == -1 {
        let held = share
            .with_member(&group, &member, |m, _| Ok(m.close_session()))
            .unwrap_or_default();
        release(broker, &group, held).await;
    }
    Ok(ShareAcknowledgeResponse::default().with_responses(responses))
}
