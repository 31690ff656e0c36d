//! What DescribeShareGroupOffsets, AlterShareGroupOffsets and
//! DeleteShareGroupOffsets share. A share group's start offset on a
//! partition (KIP-932's share-partition start offset: every record below
//! it is acknowledged) is the cursor of the native group of the same name,
//! which the committed-offset calls of the engine read and write
//! (`Engine::committed_offsets`, `commit_offsets`, `delete_offsets`): the
//! position a native pop of the group, and so a ShareFetch, starts from.

use kafka_protocol::ResponseError;
use storage::offsets::TopicOffset;
use storage::{Access, AclOperation, QueueInfo};

use super::Refusal;
use crate::broker::Broker;
use crate::error::{storage_code, storage_error};

/// Why the offset APIs cannot act on `group` at all: this broker does not
/// coordinate it, or it is a group of another kind (`GROUP_ID_NOT_FOUND`).
pub(crate) async fn group_error(broker: &Broker, group: &str) -> Option<Refusal> {
    if let Some(error) = broker.group_error(group).await {
        return Some((error, error.to_string()));
    }
    if broker.groups.is_other_than_share(group) {
        return Some((
            ResponseError::GroupIdNotFound,
            format!("group {group} is not a share group"),
        ));
    }
    None
}

/// The start offsets of an existing share group (one that has members or
/// had them recently, or has positions), or why there are none to act on.
pub(crate) async fn positions(broker: &Broker, group: &str) -> Result<Vec<TopicOffset>, Refusal> {
    if let Some(refusal) = group_error(broker, group).await {
        return Err(refusal);
    }
    let positions = broker
        .engine
        .committed_offsets(group)
        .await
        .map_err(|e| (storage_error(&e), e.to_string()))?;
    if positions.is_empty() && !broker.groups.share.knows(group) {
        return Err((
            ResponseError::GroupIdNotFound,
            format!("share group {group} does not exist"),
        ));
    }
    Ok(positions)
}

/// Refuses changes to a group's start offsets while it has members, as
/// Kafka does (`NON_EMPTY_GROUP`): they acquire records from there.
pub(crate) fn refuse_if_busy(broker: &Broker, group: &str) -> Result<(), Refusal> {
    if broker.groups.share.is_busy(group) {
        return Err((
            ResponseError::NonEmptyGroup,
            format!("share group {group} has members"),
        ));
    }
    Ok(())
}

/// A topic named in a request, or the code its partitions answer: the
/// principal may not `operation` it (`TOPIC_AUTHORIZATION_FAILED`), or it
/// does not exist (`UNKNOWN_TOPIC_OR_PARTITION`).
pub(crate) async fn topic(
    broker: &Broker,
    access: &Access,
    operation: AclOperation,
    name: &str,
) -> Result<QueueInfo, i16> {
    if !access.topic(operation, name) {
        return Err(ResponseError::TopicAuthorizationFailed.code());
    }
    match broker.engine.queue(name).await {
        Ok(Some(info)) => Ok(info),
        Ok(None) => Err(ResponseError::UnknownTopicOrPartition.code()),
        Err(e) => Err(storage_code(&e)),
    }
}
