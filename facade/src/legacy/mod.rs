//! The protocol versions older than the `kafka-protocol` crate's (it has
//! Kafka 4.0's schemas; Kafka 3.9 still serves these, and clients such as
//! sarama 1.22, kafka-go 0.2 and Burrow send them). Each API's file
//! decodes its old request into the crate's request struct and encodes the
//! crate's response struct in the old form, so the ordinary handler serves
//! the request: no handler logic lives here. Records travel as message
//! sets of magic 0 and 1 ([`message_set`]); stored batches are
//! down-converted for Fetch v0–v3 ([`down_convert`]).
//!
//! Where an old version's wire form equals a newer one's, the crate's codec
//! is used at that version (checked first by `crate::guard`). Versions not
//! served at all are answered by [`unsupported`] where the client can read
//! the answer.

mod acls;
mod create_topics;
mod delete_topics;
mod describe_configs;
pub(crate) mod down_convert;
mod fetch;
mod list_offsets;
pub(crate) mod message_set;
mod offset_commit;
mod offset_for_leader_epoch;
mod produce;
pub(crate) mod unsupported;
mod wire;

use std::any::Any;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::conn::ConnError;
use crate::versions;
use wire::Reader;

/// Whether `version` of `api` is one of the old versions served here.
pub(crate) fn serves(api: ApiKey, version: i16) -> bool {
    versions::legacy_range(api).is_some_and(|(min, max)| (min..=max).contains(&version))
}

/// Decodes the body of an old `version` of `api` (a version [`serves`]
/// accepts) into the crate's request struct.
pub(crate) fn decode_request(
    api: ApiKey,
    version: i16,
    body: Bytes,
) -> Result<RequestKind, ConnError> {
    let mut r = Reader::new(body.clone());
    let kind = match api {
        ApiKey::Produce => RequestKind::Produce(produce::decode(&mut r)?),
        ApiKey::Fetch => RequestKind::Fetch(fetch::decode(version, &mut r)?),
        ApiKey::ListOffsets => RequestKind::ListOffsets(list_offsets::decode(&mut r)?),
        ApiKey::OffsetCommit => RequestKind::OffsetCommit(offset_commit::decode(version, &mut r)?),
        // v0 is v1 on the wire (v1 only moved the offsets out of ZooKeeper).
        ApiKey::OffsetFetch => RequestKind::OffsetFetch(as_version(api, 1, body)?),
        ApiKey::CreateTopics => RequestKind::CreateTopics(create_topics::decode(version, body)?),
        // v0 is v1 on the wire (v1 added the answer's throttle time).
        ApiKey::DeleteTopics => RequestKind::DeleteTopics(as_version(api, 1, body)?),
        ApiKey::OffsetForLeaderEpoch => {
            RequestKind::OffsetForLeaderEpoch(offset_for_leader_epoch::decode(&mut r)?)
        }
        ApiKey::DescribeConfigs => RequestKind::DescribeConfigs(describe_configs::decode(&mut r)?),
        ApiKey::DescribeAcls => RequestKind::DescribeAcls(acls::decode_describe(&mut r)?),
        ApiKey::CreateAcls => RequestKind::CreateAcls(acls::decode_create(&mut r)?),
        ApiKey::DeleteAcls => RequestKind::DeleteAcls(acls::decode_delete(&mut r)?),
        // v0 is v1 on the wire (v1 only throttles after answering).
        ApiKey::DescribeLogDirs => RequestKind::DescribeLogDirs(as_version(api, 1, body)?),
        _ => {
            return Err(ConnError::UnsupportedVersion {
                api: format!("{api:?}"),
                version,
            })
        }
    };
    Ok(kind)
}

/// Decodes `body` with the crate's codec at `version`, whose wire form the
/// old version shares, after the same bounds check as any request.
fn as_version<T: Decodable>(api: ApiKey, version: i16, mut body: Bytes) -> Result<T, ConnError> {
    crate::guard::check(api, version, &body)
        .map_err(|e| ConnError::Malformed(format!("{api:?}: {e}")))?;
    T::decode(&mut body, version).map_err(|e| ConnError::Malformed(format!("{api:?}: {e}")))
}

/// Encodes `answer`, the handler's response struct for `api`, as the old
/// `version` asks.
pub(crate) fn encode_response(
    api: ApiKey,
    version: i16,
    answer: &dyn Any,
    out: &mut BytesMut,
) -> Result<(), ConnError> {
    match api {
        ApiKey::Produce => produce::encode(version, downcast(api, version, answer)?, out),
        ApiKey::Fetch => fetch::encode(version, downcast(api, version, answer)?, out)?,
        ApiKey::ListOffsets => list_offsets::encode(downcast(api, version, answer)?, out),
        // v0 and v1 answer as v2 does (v3 added the throttle time).
        ApiKey::OffsetCommit => as_encoded(api, version, 2, answer, out)?,
        ApiKey::OffsetFetch => as_encoded(api, version, 1, answer, out)?,
        ApiKey::CreateTopics => {
            create_topics::encode(version, downcast(api, version, answer)?, out)
        }
        ApiKey::DeleteTopics => delete_topics::encode(downcast(api, version, answer)?, out),
        ApiKey::OffsetForLeaderEpoch => {
            offset_for_leader_epoch::encode(version, downcast(api, version, answer)?, out)
        }
        ApiKey::DescribeConfigs => describe_configs::encode(downcast(api, version, answer)?, out),
        ApiKey::DescribeAcls => acls::encode_describe(downcast(api, version, answer)?, out),
        // v0 answers as v1 (v1 only added the pattern type to the request).
        ApiKey::CreateAcls => as_encoded(api, version, 1, answer, out)?,
        ApiKey::DeleteAcls => acls::encode_delete(downcast(api, version, answer)?, out),
        ApiKey::DescribeLogDirs => as_encoded(api, version, 1, answer, out)?,
        _ => {
            return Err(ConnError::Encode(format!(
                "{api:?} v{version} has no legacy codec"
            )))
        }
    }
    Ok(())
}

fn downcast<T: 'static>(api: ApiKey, version: i16, answer: &dyn Any) -> Result<&T, ConnError> {
    answer.downcast_ref::<T>().ok_or_else(|| {
        ConnError::Encode(format!(
            "{api:?} v{version}: the answer is not a {}",
            std::any::type_name::<T>()
        ))
    })
}

/// Encodes `answer` with the crate's codec at `as_version`, whose wire form
/// the old `version` shares.
fn as_encoded(
    api: ApiKey,
    version: i16,
    as_version: i16,
    answer: &dyn Any,
    out: &mut BytesMut,
) -> Result<(), ConnError> {
    let encoded = match api {
        ApiKey::OffsetCommit => {
            downcast::<kafka_protocol::messages::OffsetCommitResponse>(api, version, answer)?
                .encode(out, as_version)
        }
        ApiKey::OffsetFetch => {
            downcast::<kafka_protocol::messages::OffsetFetchResponse>(api, version, answer)?
                .encode(out, as_version)
        }
        ApiKey::CreateAcls => {
            downcast::<kafka_protocol::messages::CreateAclsResponse>(api, version, answer)?
                .encode(out, as_version)
        }
        ApiKey::DescribeLogDirs => {
            downcast::<kafka_protocol::messages::DescribeLogDirsResponse>(api, version, answer)?
                .encode(out, as_version)
        }
        _ => {
            return Err(ConnError::Encode(format!(
                "{api:?} v{version}: no shared form"
            )))
        }
    };
    encoded.map_err(|e| ConnError::Encode(format!("{api:?} v{version}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arbitrary_old_requests_are_refused_without_panicking() {
        let mut next = crate::noise::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let &(api, min, max) = &versions::LEGACY[(next() as usize) % versions::LEGACY.len()];
            let version = min + (next() % (max - min + 1) as u64) as i16;
            let len = (next() % 96) as usize;
            let body: Vec<u8> = (0..len).map(|_| (next() % 7) as u8).collect();
            let _ = decode_request(api, version, Bytes::from(body));
        }
    }
}
