//! Request dispatch: decode the header, check the version against
//! [`crate::versions`], decode the body with `kafka-protocol` (or, for the
//! versions older than its own, with `crate::legacy`), call the API's
//! handler (one file each), encode the answer with its header.

mod acls;
mod add_offsets_to_txn;
mod add_partitions_to_txn;
mod alter_configs;
mod alter_partition_reassignments;
mod alter_share_group_offsets;
mod alter_user_scram_credentials;
mod api_versions;
mod consumer_group_describe;
mod consumer_group_heartbeat;
mod create_acls;
mod create_partitions;
mod create_topics;
mod delete_acls;
mod delete_groups;
mod delete_records;
mod delete_share_group_offsets;
mod delete_topics;
mod describe_acls;
mod describe_cluster;
mod describe_configs;
mod describe_groups;
mod describe_log_dirs;
mod describe_producers;
mod describe_share_group_offsets;
mod describe_transactions;
mod describe_user_scram_credentials;
mod elect_leaders;
mod end_txn;
mod fetch;
mod fetch_frame;
mod find_coordinator;
mod group_describe;
mod heartbeat;
mod incremental_alter_configs;
mod init_producer_id;
mod join_group;
mod leave_group;
mod list_groups;
mod list_offsets;
mod list_partition_reassignments;
mod list_transactions;
mod metadata;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod offset_for_leader_epoch;
mod produce;
mod share_acknowledge;
mod share_fetch;
mod share_group_describe;
mod share_group_heartbeat;
mod sync_group;
mod txn_offset_commit;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument;

use storage::Access;

use crate::broker::Broker;
use crate::conn::ConnError;
use crate::metrics::{self, RequestMetrics, KAFKA};
use crate::versions;

/// The answer to a request: a frame (or none, for `acks = 0`) now, or a
/// future that yields it once the request's appends have committed.
pub enum Reply {
    /// Answered already.
    Ready(Option<BytesMut>),
    /// Answered already, as chunks of one frame (a fetch's records are not
    /// copied into it), holding room of the in-flight budget until the
    /// answer is written.
    Held(Vec<Bytes>, OwnedSemaphorePermit),
    /// To be answered when the future resolves; answers still go out in
    /// request order.
    Later(Pin<Box<dyn Future<Output = Result<Option<BytesMut>, ConnError>> + Send>>),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ready(frame) => f.debug_tuple("Ready").field(frame).finish(),
            Self::Held(frame, _) => f.debug_tuple("Held").field(frame).finish(),
            Self::Later(_) => f.write_str("Later(..)"),
        }
    }
}

/// A request frame, decoded.
#[derive(Debug)]
pub struct Parsed {
    /// The API it calls.
    pub api: ApiKey,
    /// The API version.
    pub version: i16,
    /// The id its answer must carry.
    pub correlation_id: i32,
    /// The client id of the header (a slice of the frame: no copy on the
    /// hot path; only JoinGroup keeps it).
    pub client_id: Option<StrBytes>,
    /// The body; `None` for a version this broker does not implement that
    /// is answered anyway (`UNSUPPORTED_VERSION`; ApiVersions as v0).
    pub body: Option<RequestKind>,
}

/// Decodes a request frame (without its length prefix): header, version
/// check against [`versions`], body. Touches nothing; the fuzz target
/// drives it with arbitrary bytes.
pub fn parse(mut frame: Bytes) -> Result<Parsed, ConnError> {
    if frame.len() < 4 {
        return Err(ConnError::Malformed(
            "frame shorter than a request header".into(),
        ));
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api = ApiKey::try_from(key).map_err(|_| ConnError::UnknownApi(key))?;
    let header = RequestHeader::decode(&mut frame, api.request_header_version(version))
        .map_err(|e| ConnError::Malformed(format!("request header: {e}")))?;
    let correlation_id = header.correlation_id;
    let client_id = header.client_id;
    if !versions::supports(api, version) {
        // Answered with UNSUPPORTED_VERSION in `route` (ApiVersions as v0).
        if api == ApiKey::ApiVersions
            || crate::legacy::unsupported::answer(api, version, correlation_id).is_some()
        {
            return Ok(Parsed {
                api,
                version,
                correlation_id,
                client_id,
                body: None,
            });
        }
        return Err(ConnError::UnsupportedVersion {
            api: format!("{api:?}"),
            version,
        });
    }
    if crate::legacy::serves(api, version) {
        return Ok(Parsed {
            api,
            version,
            correlation_id,
            client_id,
            body: Some(crate::legacy::decode_request(api, version, frame)?),
        });
    }
    // The codec trusts counts from the wire when it allocates; check them first.
    crate::guard::check(api, version, &frame)
        .map_err(|e| ConnError::Malformed(format!("{api:?} v{version}: {e}")))?;
    let body = RequestKind::decode(api, &mut frame, version)
        .map_err(|e| ConnError::Malformed(e.to_string()))?;
    Ok(Parsed {
        api,
        version,
        correlation_id,
        client_id,
        body: Some(body),
    })
}

/// Who sent a request: what group members are described with.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The client id of the request header.
    pub client_id: String,
    /// The peer's address, as `/ip` the way Kafka shows it.
    pub host: String,
}

/// Handles one request frame from `principal` at `peer`, connected through
/// the listener named `listener` (whose brokers' addresses Metadata and the
/// coordinator lookups answer): counts it, times it and logs it in a debug
/// span (API, version, client id, duration), then routes it with what the
/// principal may do.
pub async fn dispatch(
    broker: &Arc<Broker>,
    peer: &str,
    listener: &str,
    principal: &str,
    frame: Bytes,
) -> Result<Reply, ConnError> {
    let start = Instant::now();
    let head = metrics::head(&frame);
    let parsed = parse(frame).inspect_err(|_| KAFKA.undecodable(head))?;
    let request = KAFKA.request(parsed.api, parsed.version);
    // Field values are evaluated only when debug is enabled for this crate.
    let span = tracing::debug_span!(
        "kafka_request",
        api = ?parsed.api,
        version = parsed.version,
        correlation_id = parsed.correlation_id,
        client_id = parsed.client_id.as_deref().unwrap_or(""),
        peer,
        listener,
    );
    let access = broker.authorizer.access(principal, peer).await;
    let reply = route(
        broker,
        peer,
        listener,
        &access,
        parsed,
        start,
        request.clone(),
    )
    .instrument(span.clone())
    .await;
    match &reply {
        // A produce is timed when its appends have committed (in `route`).
        Ok(Reply::Later(_)) => {}
        Ok(Reply::Ready(_) | Reply::Held(..)) => {
            request.done(start, false);
            answered(&span, start);
        }
        Err(e) => {
            request.done(start, true);
            tracing::debug!(parent: &span, error = %e, "kafka request failed");
        }
    }
    reply
}

/// Logs, at debug level in the request's span, that it was answered.
fn answered(span: &tracing::Span, start: Instant) {
    tracing::debug!(
        parent: span,
        duration_ms = start.elapsed().as_secs_f64() * 1e3,
        "kafka request answered"
    );
}

/// Calls the API's handler.
async fn route(
    broker: &Arc<Broker>,
    peer: &str,
    listener: &str,
    access: &Access,
    parsed: Parsed,
    start: Instant,
    metrics: RequestMetrics,
) -> Result<Reply, ConnError> {
    let Parsed {
        api,
        version,
        correlation_id,
        client_id,
        body,
    } = parsed;
    let ready = |answer: Result<BytesMut, ConnError>| answer.map(|f| Reply::Ready(Some(f)));
    macro_rules! route {
        ($($kind:ident => $handler:ident),* $(,)?) => {
            match body {
                // Answered as v0, the one form every client can read.
                None if api == ApiKey::ApiVersions => {
                    ready(respond(api, 0, correlation_id, &api_versions::unsupported()))
                }
                None => crate::legacy::unsupported::answer(api, version, correlation_id)
                    .map(|frame| Reply::Ready(Some(frame)))
                    .ok_or_else(|| ConnError::UnsupportedVersion { api: format!("{api:?}"), version }),
                $(Some(RequestKind::$kind(request)) => {
                    let answer = $handler::handle(broker, version, request, access).await;
                    ready(respond(api, version, correlation_id, &answer))
                })*
                Some(RequestKind::Fetch(request)) => {
                    let (answer, held) = fetch::handle(broker, version, request, access).await;
                    match held {
                        Some(held) => fetch_frame::frame(version, correlation_id, answer)
                            .map(|chunks| Reply::Held(chunks, held)),
                        None => ready(respond(api, version, correlation_id, &answer)),
                    }
                }
                Some(RequestKind::Metadata(request)) => {
                    let answer = metadata::handle(broker, version, request, listener, access).await;
                    ready(respond(api, version, correlation_id, &answer))
                }
                Some(RequestKind::FindCoordinator(request)) => {
                    let answer = find_coordinator::handle(broker, version, request, listener, access).await;
                    ready(respond(api, version, correlation_id, &answer))
                }
                Some(RequestKind::DescribeCluster(request)) => {
                    let answer = describe_cluster::handle(broker, version, request, listener, access).await;
                    ready(respond(api, version, correlation_id, &answer))
                }
                Some(RequestKind::JoinGroup(request)) => {
                    let caller = Caller {
                        client_id: client_id.map(|c| c.to_string()).unwrap_or_default(),
                        host: peer.to_owned(),
                    };
                    let answer = join_group::handle(broker, version, request, caller, access).await;
                    ready(respond(api, version, correlation_id, &answer))
                }
                Some(RequestKind::ConsumerGroupHeartbeat(request)) => {
                    let caller = Caller {
                        client_id: client_id.map(|c| c.to_string()).unwrap_or_default(),
                        host: peer.to_owned(),
                    };
                    let answer = consumer_group_heartbeat::handle(broker, version, request, caller, access).await;
                    ready(respond(api, version, correlation_id, &answer))
                }
                Some(RequestKind::ShareGroupHeartbeat(request)) => {
                    let caller = Caller {
                        client_id: client_id.map(|c| c.to_string()).unwrap_or_default(),
                        host: peer.to_owned(),
                    };
                    let answer = share_group_heartbeat::handle(broker, version, request, caller, access).await;
                    ready(respond(api, version, correlation_id, &answer))
                }
                Some(RequestKind::Produce(request)) => {
                    let completion = produce::handle(broker, version, request, access).await;
                    let span = tracing::Span::current();
                    Ok(Reply::Later(Box::pin(async move {
                        let frame = match completion.await {
                            Some(answer) => respond(api, version, correlation_id, &answer).map(Some),
                            None => Ok(None),
                        };
                        metrics.done(start, frame.is_err());
                        answered(&span, start);
                        frame
                    })))
                }
                Some(_) => Err(ConnError::UnsupportedVersion { api: format!("{api:?}"), version }),
            }
        };
    }
    route!(
        ApiVersions => api_versions,
        ListOffsets => list_offsets,
        CreateTopics => create_topics,
        DeleteTopics => delete_topics,
        CreatePartitions => create_partitions,
        DescribeConfigs => describe_configs,
        AlterConfigs => alter_configs,
        IncrementalAlterConfigs => incremental_alter_configs,
        OffsetForLeaderEpoch => offset_for_leader_epoch,
        InitProducerId => init_producer_id,
        DescribeProducers => describe_producers,
        DescribeLogDirs => describe_log_dirs,
        ElectLeaders => elect_leaders,
        AlterPartitionReassignments => alter_partition_reassignments,
        ListPartitionReassignments => list_partition_reassignments,
        OffsetCommit => offset_commit,
        OffsetFetch => offset_fetch,
        SyncGroup => sync_group,
        Heartbeat => heartbeat,
        LeaveGroup => leave_group,
        DescribeGroups => describe_groups,
        ListGroups => list_groups,
        DeleteGroups => delete_groups,
        OffsetDelete => offset_delete,
        DeleteRecords => delete_records,
        DescribeUserScramCredentials => describe_user_scram_credentials,
        AlterUserScramCredentials => alter_user_scram_credentials,
        CreateAcls => create_acls,
        DescribeAcls => describe_acls,
        DeleteAcls => delete_acls,
        AddPartitionsToTxn => add_partitions_to_txn,
        AddOffsetsToTxn => add_offsets_to_txn,
        EndTxn => end_txn,
        TxnOffsetCommit => txn_offset_commit,
        DescribeTransactions => describe_transactions,
        ListTransactions => list_transactions,
        ConsumerGroupDescribe => consumer_group_describe,
        ShareGroupDescribe => share_group_describe,
        ShareFetch => share_fetch,
        ShareAcknowledge => share_acknowledge,
        DescribeShareGroupOffsets => describe_share_group_offsets,
        AlterShareGroupOffsets => alter_share_group_offsets,
        DeleteShareGroupOffsets => delete_share_group_offsets,
    )
}

/// Encodes `answer` as a response frame: length, header, body.
pub(crate) fn respond<T: Encodable + std::any::Any>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    answer: &T,
) -> Result<BytesMut, ConnError> {
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_version = api.response_header_version(version);
    let legacy = crate::legacy::serves(api, version);
    // Sized once: a Fetch answer of megabytes grown by doubling held up to
    // twice its size, and left glibc's arenas fragmented with the steps.
    let size = match legacy {
        true => None,
        false => frame_size(&header, header_version, answer, version),
    };
    let mut buf = BytesMut::with_capacity(4 + size.unwrap_or(60));
    buf.put_i32(0);
    let failed = |e| ConnError::Encode(format!("{api:?} v{version}: {e}"));
    header.encode(&mut buf, header_version).map_err(failed)?;
    if legacy {
        crate::legacy::encode_response(api, version, answer, &mut buf)?;
    } else {
        answer.encode(&mut buf, version).map_err(failed)?;
    }
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}

/// The size of a frame's header and body as `kafka_protocol` encodes them
/// (the frame adds its 4-byte length); `None` for a version it cannot
/// encode.
fn frame_size<T: Encodable>(
    header: &ResponseHeader,
    header_version: i16,
    answer: &T,
    version: i16,
) -> Option<usize> {
    let header = header.compute_size(header_version).ok()?;
    Some(header + answer.compute_size(version).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arbitrary_frames_are_refused_without_panicking() {
        // A cheap deterministic generator: parse must answer every input.
        let mut next = crate::noise::xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let len = (next() % 64) as usize;
            let mut frame: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if frame.len() >= 4 {
                // Aim at real APIs and versions half the time.
                if next().is_multiple_of(2) {
                    let (key, min, max) =
                        versions::SUPPORTED[(next() as usize) % versions::SUPPORTED.len()];
                    let version = min + (next() % (max - min + 1) as u64) as i16;
                    frame[..2].copy_from_slice(&(key as i16).to_be_bytes());
                    frame[2..4].copy_from_slice(&version.to_be_bytes());
                }
            }
            let _ = parse(Bytes::from(frame));
        }
    }

    #[test]
    fn a_future_api_versions_request_is_still_answered() {
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::ApiVersions as i16)
            .with_request_api_version(99)
            .with_correlation_id(5);
        let mut frame = BytesMut::new();
        header.encode(&mut frame, 2).expect("header");
        let parsed = parse(frame.freeze()).expect("parsed");
        assert_eq!(
            (parsed.api, parsed.correlation_id),
            (ApiKey::ApiVersions, 5)
        );
        assert!(
            parsed.body.is_none(),
            "answered as v0 with UNSUPPORTED_VERSION"
        );
    }
}
