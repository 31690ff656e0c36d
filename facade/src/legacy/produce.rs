//! Produce v0–v2: v3 without the transactional id; records are message
//! sets (magic 0 or 1), read by `records::decode` like batches. The answer
//! has no log start offset (v5) and, before v2, no append time; v0 has no
//! throttle time.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};

use super::wire::{put_array, put_string, Reader};
use crate::conn::ConnError;

/// Reads `acks, timeout_ms, [topic, [partition, records]]`.
pub(super) fn decode(r: &mut Reader) -> Result<ProduceRequest, ConnError> {
    let acks = r.i16()?;
    let timeout_ms = r.i32()?;
    let topic_data = r.array(2 + 4, |r| {
        let name = r.topic()?;
        let partitions = r.array(4 + 4, |r| {
            Ok(PartitionProduceData::default()
                .with_index(r.i32()?)
                .with_records(r.nullable_bytes()?))
        })?;
        Ok(TopicProduceData::default()
            .with_name(name)
            .with_partition_data(partitions))
    })?;
    Ok(ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(timeout_ms)
        .with_topic_data(topic_data))
}

/// Writes `[topic, [partition, error, base offset, (v2) append time]],
/// (v1+) throttle time`.
pub(super) fn encode(version: i16, answer: &ProduceResponse, out: &mut BytesMut) {
    put_array(out, &answer.responses, |out, topic| {
        put_string(out, &topic.name);
        put_array(out, &topic.partition_responses, |out, p| {
            out.put_i32(p.index);
            out.put_i16(p.error_code);
            out.put_i64(p.base_offset);
            if version >= 2 {
                out.put_i64(p.log_append_time_ms);
            }
        });
    });
    if version >= 1 {
        out.put_i32(answer.throttle_time_ms);
    }
}
