//! The one table of Kafka APIs and versions this broker implements. Both
//! ApiVersions (what is advertised) and dispatch (what is accepted) read it,
//! so the two cannot drift apart.

use kafka_protocol::messages::ApiKey;

/// (API, lowest version, highest version) implemented, each version fully.
/// The lowest are the oldest the pinned `kafka-protocol` crate decodes
/// (Kafka 4.0's schemas; Kafka 3.9 serves older ones still, for clients
/// such as sarama 1.22 and kafka-go 0.2, which need codecs of their own);
/// the highest are the crate's newest.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
];

/// The implemented range of `key`, if it is implemented at all.
pub fn range(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|&(_, min, max)| (min, max))
}

/// Whether `version` of `key` is implemented.
pub fn supports(key: ApiKey, version: i16) -> bool {
    range(key).is_some_and(|(min, max)| (min..=max).contains(&version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_range_sits_inside_the_codec() {
        for &(key, min, max) in SUPPORTED {
            let codec = key.valid_versions();
            assert!(min <= max, "{key:?}");
            assert!(
                codec.min <= min && max <= codec.max,
                "{key:?} {min}..={max} outside {codec}"
            );
        }
    }

    #[test]
    fn nothing_is_listed_twice() {
        for (i, (key, _, _)) in SUPPORTED.iter().enumerate() {
            assert!(
                SUPPORTED[i + 1..].iter().all(|(k, _, _)| k != key),
                "{key:?}"
            );
        }
    }
}
