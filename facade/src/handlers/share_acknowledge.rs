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
use kafka_protocol::ResponseError;
use storage::Access;

use crate::broker::Broker;
use crate::share::acknowledge::{self, Batch};
use crate::share::target::Targets;
use crate::share::Refusal;

/// Answers one ShareAcknowledge.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: ShareAcknowledgeRequest,
    access: &Access,
) -> ShareAcknowledgeResponse {
    crate::share::answer(serve(broker, request, access).await)
}

async fn serve(
    broker: &Broker,
    request: ShareAcknowledgeRequest,
    access: &Access,
) -> Result<ShareAcknowledgeResponse, Refusal> {
    let caller = crate::share::identify(
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
            parts.push(((t.topic_id, p.partition_index), offsets));
        }
    }
    let epoch = request.share_session_epoch;
    caller.in_session(broker, epoch, |m| match epoch {
        0 => Err(ResponseError::InvalidShareSessionEpoch),
        -1 => m.has_session(),
        e => m.advance_session(e).map(|_| ()),
    })?;
    let config = caller.config(broker).await?;

    let mut targets = Targets::default();
    let mut responses: Vec<ShareAcknowledgeTopicResponse> = Vec::new();
    for ((topic_id, index), offsets) in parts {
        let code = caller
            .acknowledge(
                broker,
                access,
                &mut targets,
                (topic_id, index),
                &offsets,
                &config,
            )
            .await;
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
        caller.close_session(broker).await;
    }
    Ok(ShareAcknowledgeResponse::default().with_responses(responses))
}
