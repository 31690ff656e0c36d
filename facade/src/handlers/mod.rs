//! Request dispatch: decode the header, check the version against
//! [`crate::versions`], decode the body with `kafka-protocol`, call the
//! API's handler (one file each), encode the answer with its header.

mod api_versions;
mod create_partitions;
mod create_topics;
mod delete_topics;
mod describe_cluster;
mod describe_configs;
mod fetch;
mod list_offsets;
mod metadata;
mod offset_for_leader_epoch;
mod produce;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::broker::Broker;
use crate::conn::ConnError;
use crate::versions;

/// The answer to a request: a frame (or none, for `acks = 0`) now, or a
/// future that yields it once the request's appends have committed.
pub enum Reply {
    /// Answered already.
    Ready(Option<BytesMut>),
    /// To be answered when the future resolves; answers still go out in
    /// request order.
    Later(Pin<Box<dyn Future<Output = Result<Option<BytesMut>, ConnError>> + Send>>),
}

/// Handles one request frame.
pub async fn dispatch(broker: &Arc<Broker>, mut frame: Bytes) -> Result<Reply, ConnError> {
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api = ApiKey::try_from(key).map_err(|_| ConnError::UnknownApi(key))?;
    let header = RequestHeader::decode(&mut frame, api.request_header_version(version))
        .map_err(|e| ConnError::Malformed(format!("request header: {e}")))?;
    let correlation_id = header.correlation_id;
    if !versions::supports(api, version) {
        if api == ApiKey::ApiVersions {
            // Answered as v0, the one form every client can read.
            let answer = api_versions::unsupported();
            return respond(api, 0, correlation_id, &answer).map(|f| Reply::Ready(Some(f)));
        }
        return Err(ConnError::UnsupportedVersion {
            api: format!("{api:?}"),
            version,
        });
    }

    macro_rules! route {
        ($($api:ident => $handler:ident),* $(,)?) => {
            match api {
                $(ApiKey::$api => {
                    let request = decode(&mut frame, version)?;
                    let answer = $handler::handle(broker, version, request).await;
                    respond(api, version, correlation_id, &answer).map(|f| Reply::Ready(Some(f)))
                })*
                ApiKey::Produce => {
                    let request = decode(&mut frame, version)?;
                    let completion = produce::handle(broker, version, request).await;
                    Ok(Reply::Later(Box::pin(async move {
                        match completion.await {
                            Some(answer) => respond(api, version, correlation_id, &answer).map(Some),
                            None => Ok(None),
                        }
                    })))
                }
                _ => Err(ConnError::UnsupportedVersion { api: format!("{api:?}"), version }),
            }
        };
    }
    route!(
        ApiVersions => api_versions,
        Metadata => metadata,
        Fetch => fetch,
        ListOffsets => list_offsets,
        CreateTopics => create_topics,
        DeleteTopics => delete_topics,
        CreatePartitions => create_partitions,
        DescribeConfigs => describe_configs,
        DescribeCluster => describe_cluster,
        OffsetForLeaderEpoch => offset_for_leader_epoch,
    )
}

fn decode<T: Decodable>(frame: &mut Bytes, version: i16) -> Result<T, ConnError> {
    T::decode(frame, version).map_err(|e| ConnError::Malformed(e.to_string()))
}

/// Encodes `answer` as a response frame: length, header, body.
fn respond<T: Encodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    answer: &T,
) -> Result<BytesMut, ConnError> {
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let mut buf = BytesMut::with_capacity(64);
    buf.put_i32(0);
    header
        .encode(&mut buf, api.response_header_version(version))
        .and_then(|()| answer.encode(&mut buf, version))
        .map_err(|e| ConnError::Encode(format!("{api:?} v{version}: {e}")))?;
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}
