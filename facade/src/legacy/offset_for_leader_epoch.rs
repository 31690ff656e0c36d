//! OffsetForLeaderEpoch v0–v1: v2 without the current leader epoch (and
//! replica id) in the request; the answer has no throttle time, and v0 no
//! leader epoch either.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::wire::{put_array, put_string, Reader};
use crate::conn::ConnError;

/// Reads `[topic, [partition, leader_epoch]]`.
pub(super) fn decode(r: &mut Reader) -> Result<OffsetForLeaderEpochRequest, ConnError> {
    let topics = r.array(2 + 4, |r| {
        let topic = r.topic()?;
        let partitions = r.array(4 + 4, |r| {
            Ok(OffsetForLeaderPartition::default()
                .with_partition(r.i32()?)
                .with_leader_epoch(r.i32()?))
        })?;
        Ok(OffsetForLeaderTopic::default()
            .with_topic(topic)
            .with_partitions(partitions))
    })?;
    Ok(OffsetForLeaderEpochRequest::default().with_topics(topics))
}

/// Writes `[topic, [error, partition, (v1) leader epoch, end offset]]`.
pub(super) fn encode(version: i16, answer: &OffsetForLeaderEpochResponse, out: &mut BytesMut) {
    put_array(out, &answer.topics, |out, topic| {
        put_string(out, &topic.topic);
        put_array(out, &topic.partitions, |out, p| {
            out.put_i16(p.error_code);
            out.put_i32(p.partition);
            if version >= 1 {
                out.put_i32(p.leader_epoch);
            }
            out.put_i64(p.end_offset);
        });
    });
}
