//! The tables of Kafka APIs and versions this broker implements: those the
//! `kafka-protocol` crate decodes, and older ones with codecs of their own
//! (`crate::legacy`). Both ApiVersions (what is advertised) and dispatch
//! (what is accepted) read them, so the two cannot drift apart.

use kafka_protocol::messages::ApiKey;

/// (API, lowest version, highest version) implemented, each version fully.
/// The lowest are the oldest the pinned `kafka-protocol` crate decodes
/// (Kafka 4.0's schemas; the older ones Kafka 3.9 serves are in
/// [`LEGACY`]); the highest are the crate's newest.
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
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
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
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::DescribeTransactions, 0, 0),
    // v2 (KIP-1152) filters ids by a regular expression, whole-id match.
    (ApiKey::ListTransactions, 0, 2),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::ShareFetch, 1, 1),
    (ApiKey::ShareAcknowledge, 1, 1),
    (ApiKey::DescribeShareGroupOffsets, 0, 0),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
];

/// (API, lowest version, highest version) served by `crate::legacy`'s own
/// codecs: the versions Kafka 3.9 serves below the crate's oldest, which
/// clients such as sarama 1.22, kafka-go 0.2 and Burrow send. Each range
/// ends right below the API's range in [`SUPPORTED`].
pub const LEGACY: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 0, 2),
    (ApiKey::Fetch, 0, 3),
    (ApiKey::ListOffsets, 0, 0),
    (ApiKey::OffsetCommit, 0, 1),
    (ApiKey::OffsetFetch, 0, 0),
    (ApiKey::CreateTopics, 0, 1),
    (ApiKey::DeleteTopics, 0, 0),
    (ApiKey::DescribeConfigs, 0, 0),
    (ApiKey::OffsetForLeaderEpoch, 0, 1),
    (ApiKey::DescribeAcls, 0, 0),
    (ApiKey::CreateAcls, 0, 0),
    (ApiKey::DeleteAcls, 0, 0),
    (ApiKey::DescribeLogDirs, 0, 0),
];

fn find(table: &[(ApiKey, i16, i16)], key: ApiKey) -> Option<(i16, i16)> {
    table
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|&(_, min, max)| (min, max))
}

/// The legacy range of `key`, if it has one.
pub fn legacy_range(key: ApiKey) -> Option<(i16, i16)> {
    find(LEGACY, key)
}

/// The implemented range of `key`, old versions included, if it is
/// implemented at all.
pub fn range(key: ApiKey) -> Option<(i16, i16)> {
    let (min, max) = find(SUPPORTED, key)?;
    Some((legacy_range(key).map_or(min, |(old, _)| old), max))
}

/// Every implemented API with its whole range, as ApiVersions advertises it.
pub fn advertised() -> impl Iterator<Item = (ApiKey, i16, i16)> {
    SUPPORTED.iter().filter_map(|&(key, _, _)| {
        let (min, max) = range(key)?;
        Some((key, min, max))
    })
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
        for table in [SUPPORTED, LEGACY] {
            for (i, (key, _, _)) in table.iter().enumerate() {
                assert!(table[i + 1..].iter().all(|(k, _, _)| k != key), "{key:?}");
            }
        }
    }

    #[test]
    fn legacy_ranges_are_below_the_codec_and_meet_the_supported_ones() {
        for &(key, min, max) in LEGACY {
            let codec = key.valid_versions();
            assert!(0 <= min && min <= max, "{key:?}");
            // Old versions the crate could decode need no codec of ours.
            assert!(max < codec.min, "{key:?} {min}..={max} inside {codec}");
            let (supported, _) = find(SUPPORTED, key).expect("a legacy API is implemented");
            assert_eq!(max + 1, supported, "{key:?}: a gap between the tables");
            assert_eq!(range(key).map(|(lo, _)| lo), Some(min), "{key:?}");
            assert!((min..=max).all(|v| supports(key, v)), "{key:?}");
        }
        assert!(!supports(ApiKey::Produce, -1));
        assert_eq!(advertised().count(), SUPPORTED.len());
    }

    /// Kafka 3.9's `validVersions` (`clients/src/main/resources/common/
    /// message/*Request.json` at 3.9.0) of every API this broker
    /// implements and a 3.9 broker serves to clients. The share-group APIs
    /// are left out: 3.9 has only their unstable, unadvertised v0.
    const KAFKA_3_9: &[(ApiKey, i16, i16)] = &[
        (ApiKey::Produce, 0, 11),
        (ApiKey::Fetch, 0, 17),
        (ApiKey::ListOffsets, 0, 9),
        (ApiKey::Metadata, 0, 12),
        (ApiKey::OffsetCommit, 0, 9),
        (ApiKey::OffsetFetch, 0, 9),
        (ApiKey::FindCoordinator, 0, 6),
        (ApiKey::JoinGroup, 0, 9),
        (ApiKey::Heartbeat, 0, 4),
        (ApiKey::LeaveGroup, 0, 5),
        (ApiKey::SyncGroup, 0, 5),
        (ApiKey::DescribeGroups, 0, 5),
        (ApiKey::ListGroups, 0, 5),
        (ApiKey::SaslHandshake, 0, 1),
        (ApiKey::ApiVersions, 0, 4),
        (ApiKey::CreateTopics, 0, 7),
        (ApiKey::DeleteTopics, 0, 6),
        (ApiKey::DeleteRecords, 0, 2),
        (ApiKey::InitProducerId, 0, 5),
        (ApiKey::OffsetForLeaderEpoch, 0, 4),
        (ApiKey::AddPartitionsToTxn, 0, 5),
        (ApiKey::AddOffsetsToTxn, 0, 4),
        (ApiKey::EndTxn, 0, 4),
        (ApiKey::TxnOffsetCommit, 0, 4),
        (ApiKey::DescribeAcls, 0, 3),
        (ApiKey::CreateAcls, 0, 3),
        (ApiKey::DeleteAcls, 0, 3),
        (ApiKey::DescribeConfigs, 0, 4),
        (ApiKey::AlterConfigs, 0, 2),
        (ApiKey::DescribeLogDirs, 0, 4),
        (ApiKey::SaslAuthenticate, 0, 2),
        (ApiKey::CreatePartitions, 0, 3),
        (ApiKey::DeleteGroups, 0, 2),
        (ApiKey::ElectLeaders, 0, 2),
        (ApiKey::IncrementalAlterConfigs, 0, 1),
        (ApiKey::AlterPartitionReassignments, 0, 0),
        (ApiKey::ListPartitionReassignments, 0, 0),
        (ApiKey::OffsetDelete, 0, 0),
        (ApiKey::DescribeUserScramCredentials, 0, 0),
        (ApiKey::AlterUserScramCredentials, 0, 0),
        (ApiKey::DescribeCluster, 0, 1),
        (ApiKey::DescribeProducers, 0, 0),
        (ApiKey::DescribeTransactions, 0, 0),
        (ApiKey::ListTransactions, 0, 1),
        (ApiKey::ConsumerGroupHeartbeat, 0, 0),
        (ApiKey::ConsumerGroupDescribe, 0, 0),
    ];

    #[test]
    fn every_version_kafka_3_9_serves_of_an_implemented_api_is_advertised() {
        for &(key, min, max) in KAFKA_3_9 {
            let (ours_min, ours_max) = range(key).unwrap_or((i16::MAX, -1));
            assert!(
                ours_min <= min && max <= ours_max,
                "{key:?}: Kafka 3.9 serves {min}..={max}, we {ours_min}..={ours_max}"
            );
        }
    }
}
