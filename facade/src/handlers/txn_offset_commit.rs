//! TxnOffsetCommit: a transactional producer commits a consumer group's
//! offsets inside its transaction; OffsetFetch sees them only once the
//! transaction commits, and never if it aborts.

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kafka_protocol::ResponseError;
use storage::offsets::CommittedOffset;
use storage::producers::ProducerIdentity;
use storage::{Access, AclOperation, ResourceType, StorageError};

use crate::broker::Broker;
use crate::error::txn_code;

/// Stages each partition's offset in the transaction; errors per partition.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: TxnOffsetCommitRequest,
    access: &Access,
) -> TxnOffsetCommitResponse {
    let tid = request.transactional_id.to_string();
    let group = request.group_id.to_string();
    let refusal = if !access.allows(AclOperation::Write, ResourceType::TransactionalId, &tid) {
        Some(ResponseError::TransactionalIdAuthorizationFailed)
    } else if let Some(e) = broker.member_error(access, &group).await {
        Some(e)
    } else if version >= 3 {
        // v3+ carries the consumer's generation (KIP-447): a zombie
        // consumer's offsets are refused as OffsetCommit refuses them.
        broker.groups.commit_check(
            &group,
            request.generation_id,
            &request.member_id,
            request.group_instance_id.as_deref(),
        )
    } else {
        None
    };
    let mut topics = Vec::with_capacity(request.topics.len());
    let mut commits = Vec::new();
    let mut slots = Vec::new();
    for topic in &request.topics {
        let name = topic.name.to_string();
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let mut answer =
                TxnOffsetCommitResponsePartition::default().with_partition_index(p.partition_index);
            if let Some(e) = refusal {
                answer.error_code = e.code();
            } else {
                let offset = CommittedOffset {
                    offset: p.committed_offset,
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                    leader_epoch: (p.committed_leader_epoch >= 0)
                        .then_some(p.committed_leader_epoch),
                };
                match super::offset_commit::target(broker, access, &name, p.partition_index).await {
                    Ok(id) => {
                        commits.push((id, offset));
                        slots.push((topics.len(), partitions.len()));
                    }
                    Err(code) => answer.error_code = code,
                }
            }
            partitions.push(answer);
        }
        topics.push(
            TxnOffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    if !commits.is_empty() {
        let producer = ProducerIdentity {
            id: request.producer_id.0,
            epoch: request.producer_epoch,
        };
        let staged = broker
            .engine
            .txn_offset_commit(&tid, producer, &group, &commits)
            .await;
        if let Err(e) = staged {
            let code = match e {
                StorageError::InvalidInput(_) | StorageError::NameTooLong { .. } => {
                    ResponseError::InvalidGroupId.code()
                }
                // PRODUCER_FENCED from v3 (KIP-588).
                other => txn_code(&other, version, 3),
            };
            for (t, p) in slots {
                topics[t].partitions[p].error_code = code;
            }
        }
    }
    TxnOffsetCommitResponse::default().with_topics(topics)
}
