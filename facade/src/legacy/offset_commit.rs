//! OffsetCommit v0–v1. v0 has no generation or member (Kafka kept those
//! offsets in ZooKeeper; here they are the group's committed offsets like
//! any other); v1 adds them and a per-partition commit timestamp, which
//! Kafka ignores since v2 and so does this broker. Both answer as v2.

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest};

use super::wire::Reader;
use crate::conn::ConnError;

/// Reads `group, (v1) generation, (v1) member, [topic, [partition, offset,
/// (v1) timestamp, metadata]]`.
pub(super) fn decode(version: i16, r: &mut Reader) -> Result<OffsetCommitRequest, ConnError> {
    let mut request = OffsetCommitRequest::default().with_group_id(GroupId(r.string()?));
    if version >= 1 {
        request.generation_id_or_member_epoch = r.i32()?;
        request.member_id = r.string()?;
    }
    request.topics = r.array(2 + 4, |r| {
        let name = r.topic()?;
        let partitions = r.array(4 + 8 + 2, |r| {
            let index = r.i32()?;
            let offset = r.i64()?;
            if version >= 1 {
                let _commit_timestamp = r.i64()?;
            }
            Ok(OffsetCommitRequestPartition::default()
                .with_partition_index(index)
                .with_committed_offset(offset)
                .with_committed_metadata(r.nullable_string()?))
        })?;
        Ok(OffsetCommitRequestTopic::default()
            .with_name(name)
            .with_partitions(partitions))
    })?;
    Ok(request)
}
