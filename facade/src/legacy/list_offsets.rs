//! ListOffsets v0: a partition asks with a timestamp (-1 latest, -2
//! earliest) and a maximum count, and is answered a list of offsets rather
//! than one offset and its timestamp (v1).

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::wire::{put_array, put_string, Reader};
use crate::conn::ConnError;

/// Reads `replica, [topic, [partition, timestamp, max_num_offsets]]`; the
/// handler answers one offset, so the count only matters when it is 0.
pub(super) fn decode(r: &mut Reader) -> Result<ListOffsetsRequest, ConnError> {
    let replica_id = r.i32()?;
    let topics = r.array(2 + 4, |r| {
        let name = r.topic()?;
        let partitions = r.array(4 + 8 + 4, |r| {
            let partition = ListOffsetsPartition::default()
                .with_partition_index(r.i32()?)
                .with_timestamp(r.i64()?);
            let _max_num_offsets = r.i32()?;
            Ok(partition)
        })?;
        Ok(ListOffsetsTopic::default()
            .with_name(name)
            .with_partitions(partitions))
    })?;
    Ok(ListOffsetsRequest::default()
        .with_replica_id(replica_id.into())
        .with_topics(topics))
}

/// Writes `[topic, [partition, error, [offset]]]`: the one offset found,
/// or none (an error, or no offset for the timestamp).
pub(super) fn encode(answer: &ListOffsetsResponse, out: &mut BytesMut) {
    put_array(out, &answer.topics, |out, topic| {
        put_string(out, &topic.name);
        put_array(out, &topic.partitions, |out, p| {
            out.put_i32(p.partition_index);
            out.put_i16(p.error_code);
            let found = [p.offset];
            let offsets = if p.error_code == 0 && p.offset >= 0 {
                &found[..]
            } else {
                &[]
            };
            put_array(out, offsets, |out, o| out.put_i64(*o));
        });
    });
}
