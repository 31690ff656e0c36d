//! Raw-protocol calls of KIP-932's share-group offset APIs for the tests:
//! DescribeShareGroupOffsets, AlterShareGroupOffsets and
//! DeleteShareGroupOffsets (v0, the only version the crate has).

use kafka_protocol::messages::alter_share_group_offsets_request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
use kafka_protocol::messages::describe_share_group_offsets_request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::describe_share_group_offsets_response::DescribeShareGroupOffsetsResponseGroup;
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, ApiKey,
    DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::kafka::call;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

/// The start offsets of `group` on the partitions of `topics` (all of the
/// group's when `None`): the answer's one group.
pub(crate) fn describe_offsets(
    kafka: &str,
    group: &str,
    topics: Option<&[(&str, &[i32])]>,
) -> DescribeShareGroupOffsetsResponseGroup {
    let request = DescribeShareGroupOffsetsRequest::default().with_groups(vec![
        DescribeShareGroupOffsetsRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(topics.map(|ts| {
                ts.iter()
                    .map(|(t, ps)| {
                        DescribeShareGroupOffsetsRequestTopic::default()
                            .with_topic_name(TopicName(s(t)))
                            .with_partitions(ps.to_vec())
                    })
                    .collect()
            })),
    ]);
    let mut answer: DescribeShareGroupOffsetsResponse =
        call(kafka, ApiKey::DescribeShareGroupOffsets, 0, &request);
    assert_eq!(answer.groups.len(), 1);
    answer.groups.remove(0)
}

/// A described group's (topic, partition, start offset, error code), in
/// answer order.
pub(crate) fn starts(
    group: &DescribeShareGroupOffsetsResponseGroup,
) -> Vec<(String, i32, i64, i16)> {
    group
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    t.topic_name.to_string(),
                    p.partition_index,
                    p.start_offset,
                    p.error_code,
                )
            })
        })
        .collect()
}

/// Sets start offsets of `group`: (topic, [(partition, offset)]).
pub(crate) fn alter_offsets(
    kafka: &str,
    group: &str,
    topics: &[(&str, &[(i32, i64)])],
) -> AlterShareGroupOffsetsResponse {
    let request = AlterShareGroupOffsetsRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(
            topics
                .iter()
                .map(|(t, ps)| {
                    AlterShareGroupOffsetsRequestTopic::default()
                        .with_topic_name(TopicName(s(t)))
                        .with_partitions(
                            ps.iter()
                                .map(|(p, o)| {
                                    AlterShareGroupOffsetsRequestPartition::default()
                                        .with_partition_index(*p)
                                        .with_start_offset(*o)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    call(kafka, ApiKey::AlterShareGroupOffsets, 0, &request)
}

/// Deletes the start offsets of `group` on `topics`.
pub(crate) fn delete_offsets(
    kafka: &str,
    group: &str,
    topics: &[&str],
) -> DeleteShareGroupOffsetsResponse {
    let request = DeleteShareGroupOffsetsRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(
            topics
                .iter()
                .map(|t| {
                    DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(s(t)))
                })
                .collect(),
        );
    call(kafka, ApiKey::DeleteShareGroupOffsets, 0, &request)
}
