//! Fetch v0–v3: v4 without the isolation level (read uncommitted), and
//! before v3 without a request-wide byte limit. The answer has no last
//! stable offset or aborted transactions (v4); its records are the stored
//! batches down-converted to a message set (magic 0 for v0–v1, magic 1 for
//! v2–v3); v0 has no throttle time.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, FetchResponse};

use super::down_convert::{convert, magic_for};
use super::wire::{put_array, put_bytes, put_string, Reader};
use crate::conn::ConnError;

/// Reads `replica, max_wait_ms, min_bytes, (v3) max_bytes, [topic,
/// [partition, fetch_offset, partition_max_bytes]]`.
pub(super) fn decode(version: i16, r: &mut Reader) -> Result<FetchRequest, ConnError> {
    let mut request = FetchRequest::default()
        .with_replica_id(r.i32()?.into())
        .with_max_wait_ms(r.i32()?)
        .with_min_bytes(r.i32()?);
    if version >= 3 {
        request.max_bytes = r.i32()?;
    }
    request.topics = r.array(2 + 4, |r| {
        let topic = r.topic()?;
        let partitions = r.array(4 + 8 + 4, |r| {
            Ok(FetchPartition::default()
                .with_partition(r.i32()?)
                .with_fetch_offset(r.i64()?)
                .with_partition_max_bytes(r.i32()?))
        })?;
        Ok(FetchTopic::default()
            .with_topic(topic)
            .with_partitions(partitions))
    })?;
    Ok(request)
}

/// Writes `(v1+) throttle time, [topic, [partition, error, high watermark,
/// message set]]`.
pub(super) fn encode(
    version: i16,
    answer: &FetchResponse,
    out: &mut BytesMut,
) -> Result<(), ConnError> {
    if version >= 1 {
        out.put_i32(answer.throttle_time_ms);
    }
    let magic = magic_for(version);
    let mut failed = None;
    put_array(out, &answer.responses, |out, topic| {
        put_string(out, &topic.topic);
        put_array(out, &topic.partitions, |out, p| {
            out.put_i32(p.partition_index);
            out.put_i16(p.error_code);
            out.put_i64(p.high_watermark);
            let set = match p.records.clone().map(|r| convert(r, magic)).transpose() {
                Ok(set) => set.unwrap_or_default(),
                Err(e) => {
                    failed = Some(e);
                    Default::default()
                }
            };
            put_bytes(out, &set);
        });
    });
    match failed {
        // Stored batches are the broker's own: one that does not read back is a bug.
        Some(e) => Err(ConnError::Encode(format!(
            "Fetch v{version}: down-conversion: {e}"
        ))),
        None => Ok(()),
    }
}
