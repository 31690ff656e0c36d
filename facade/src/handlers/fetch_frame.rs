//! A Fetch answer framed around its records instead of copied with them.
//!
//! A consumer's fetch answers megabytes (librdkafka asks up to 1 MiB per
//! partition). Encoded whole, the answer's records were copied into one
//! frame while the batches they came from were still held: every byte
//! twice in memory, and a frame of megabytes allocated and freed per fetch,
//! which left glibc's arenas holding tens of MiB. Here a partition's records
//! of at least [`OWN_CHUNK`] bytes go out as a chunk of their own, between
//! the encoded fields around them; the chunks together are byte for byte
//! the frame [`respond`] writes.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseHeader};
use kafka_protocol::protocol::Encodable;

use super::{frame_size, respond};
use crate::conn::ConnError;
use crate::varint;

/// Records at least this large are written from their own buffer; smaller
/// ones are copied into the frame, where a chunk of their own would cost a
/// write call more than the copy.
const OWN_CHUNK: usize = 32 << 10;

/// The answer's frame (length, header, body) as chunks to write in order.
pub(crate) fn frame(
    version: i16,
    correlation_id: i32,
    answer: FetchResponse,
) -> Result<Vec<Bytes>, ConnError> {
    let large = answer
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .any(|p| p.records.as_ref().is_some_and(|r| r.len() >= OWN_CHUNK));
    // Only the fields a fetch answers with are written here; anything else
    // (tagged fields) goes the general way.
    let plain = answer.unknown_tagged_fields.is_empty()
        && answer.node_endpoints.is_empty()
        && answer
            .responses
            .iter()
            .all(|t| t.unknown_tagged_fields.is_empty());
    if !large || !plain || crate::legacy::serves(ApiKey::Fetch, version) {
        let whole = respond(ApiKey::Fetch, version, correlation_id, &answer)?;
        return Ok(vec![whole.freeze()]);
    }
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_version = ApiKey::Fetch.response_header_version(version);
    let size = frame_size(&header, header_version, &answer, version)
        .ok_or_else(|| failed(version, "cannot be sized"))?;
    let flexible = version >= 12;

    let mut chunks = Vec::new();
    let mut buf = BytesMut::with_capacity(1024);
    let length = i32::try_from(size).map_err(|_| failed(version, format!("{size} bytes")))?;
    buf.put_i32(length);
    header
        .encode(&mut buf, header_version)
        .map_err(|e| failed(version, e))?;
    buf.put_i32(answer.throttle_time_ms);
    if version >= 7 {
        buf.put_i16(answer.error_code);
        buf.put_i32(answer.session_id);
    }
    put_count(&mut buf, version, answer.responses.len())?;
    for topic in answer.responses {
        if version >= 13 {
            buf.put_slice(topic.topic_id.as_bytes());
        } else {
            let name = topic.topic.as_bytes();
            match flexible {
                true => put_count(&mut buf, version, name.len())?,
                false => buf.put_i16(
                    i16::try_from(name.len())
                        .map_err(|_| failed(version, "a topic name's length"))?,
                ),
            }
            buf.put_slice(name);
        }
        put_count(&mut buf, version, topic.partitions.len())?;
        for mut partition in topic.partitions {
            match partition.records.take_if(|r| r.len() >= OWN_CHUNK) {
                None => partition
                    .encode(&mut buf, version)
                    .map_err(|e| failed(version, e))?,
                Some(records) => {
                    let (before, after) = around_records(partition, version)?;
                    buf.put_slice(&before);
                    // Bytes are counted as arrays are.
                    put_count(&mut buf, version, records.len())?;
                    chunks.push(buf.split().freeze());
                    chunks.push(records);
                    buf.put_slice(&after);
                }
            }
        }
        if flexible {
            varint::put_unsigned(&mut buf, 0); // no tagged fields
        }
    }
    if flexible {
        varint::put_unsigned(&mut buf, 0);
    }
    chunks.push(buf.freeze());
    let written: usize = chunks.iter().map(Bytes::len).sum();
    if written != size + 4 {
        return Err(ConnError::Encode(format!(
            "Fetch v{version}: framed {written} bytes of {}",
            size + 4
        )));
    }
    Ok(chunks)
}

/// A partition's encoding (without its records) before and after its
/// records' length and bytes. The partition is encoded with no records
/// and with empty ones: the two first differ where the records' length
/// starts, whatever fields the version has before or after them.
fn around_records(
    mut partition: PartitionData,
    version: i16,
) -> Result<(BytesMut, BytesMut), ConnError> {
    partition.records = None;
    let mut none = BytesMut::new();
    partition
        .encode(&mut none, version)
        .map_err(|e| failed(version, e))?;
    partition.records = Some(Bytes::new());
    let mut empty = BytesMut::new();
    partition
        .encode(&mut empty, version)
        .map_err(|e| failed(version, e))?;
    let at = none
        .iter()
        .zip(empty.iter())
        .position(|(a, b)| a != b)
        .ok_or_else(|| failed(version, "no records in a partition's encoding"))?;
    // An empty length: one varint byte (flexible versions) or an i32.
    let width = if version >= 12 { 1 } else { 4 };
    let after = empty.split_off(at + width);
    empty.truncate(at);
    Ok((empty, after))
}

/// An array's count: an i32, or in flexible versions (12 on) a varint of
/// count + 1.
fn put_count(buf: &mut BytesMut, version: i16, n: usize) -> Result<(), ConnError> {
    let count = i32::try_from(n).map_err(|_| failed(version, format!("a count of {n}")))?;
    match version >= 12 {
        true => varint::put_unsigned(buf, n as u64 + 1),
        false => buf.put_i32(count),
    }
    Ok(())
}

fn failed(version: i16, e: impl std::fmt::Display) -> ConnError {
    ConnError::Encode(format!("Fetch v{version}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{AbortedTransaction, FetchableTopicResponse};
    use kafka_protocol::messages::{ProducerId, TopicName};
    use kafka_protocol::protocol::StrBytes;

    fn records(len: usize, seed: u8) -> Bytes {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    /// Two topics, with partitions of large, small, empty and no records,
    /// an error and aborted transactions.
    fn answer() -> FetchResponse {
        let partition = |index: i32, records: Option<Bytes>| {
            PartitionData::default()
                .with_partition_index(index)
                .with_high_watermark(1_000 + i64::from(index))
                .with_last_stable_offset(900)
                .with_log_start_offset(7)
                .with_records(records)
        };
        let aborted = vec![AbortedTransaction::default()
            .with_producer_id(ProducerId(42))
            .with_first_offset(12)];
        FetchResponse::default()
            .with_throttle_time_ms(3)
            .with_responses(vec![
                FetchableTopicResponse::default()
                    .with_topic(TopicName(StrBytes::from_static_str("orders")))
                    .with_topic_id(uuid::Uuid::from_u128(7))
                    .with_partitions(vec![
                        partition(0, Some(records(OWN_CHUNK, 1)))
                            .with_aborted_transactions(Some(aborted)),
                        partition(1, Some(records(100, 2))),
                        partition(2, None).with_error_code(1),
                        partition(3, Some(records(300 << 10, 3))),
                    ]),
                FetchableTopicResponse::default()
                    .with_topic(TopicName(StrBytes::from_static_str("payments")))
                    .with_topic_id(uuid::Uuid::from_u128(8))
                    .with_partitions(vec![
                        partition(0, Some(Bytes::new())),
                        partition(5, Some(records(OWN_CHUNK + 1, 4))),
                    ]),
            ])
    }

    #[test]
    fn chunks_are_the_whole_frame_in_every_version() {
        for version in 4..=18 {
            let whole = respond(ApiKey::Fetch, version, 99, &answer()).expect("encoded");
            let chunks = frame(version, 99, answer()).expect("framed");
            // Three large records, each between two encoded chunks.
            assert_eq!(chunks.len(), 7, "v{version}");
            assert_eq!(chunks.concat(), whole.to_vec(), "v{version}");
        }
    }

    #[test]
    fn an_answer_without_large_records_is_one_frame() {
        let small =
            FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![
                    PartitionData::default().with_records(Some(records(OWN_CHUNK - 1, 5)))
                ])]);
        for version in 4..=18 {
            let chunks = frame(version, 1, small.clone()).expect("framed");
            let whole = respond(ApiKey::Fetch, version, 1, &small).expect("encoded");
            assert_eq!(chunks, vec![whole.freeze()], "v{version}");
        }
    }
}
