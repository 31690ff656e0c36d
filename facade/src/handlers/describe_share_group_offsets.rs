//! DescribeShareGroupOffsets (KIP-932): each share group's start offset on
//! the partitions asked for (or on every partition it has one for, when
//! the topic list is null); `-1` where it has none. As Kafka: DESCRIBE on
//! the group, and on each topic answered.

use std::collections::HashMap;

use kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};
use uuid::Uuid;

use crate::broker::Broker;
use crate::share::offsets;

/// Describes each group's start offsets; errors are per group or partition.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DescribeShareGroupOffsetsRequest,
    access: &Access,
) -> DescribeShareGroupOffsetsResponse {
    let mut groups = Vec::with_capacity(request.groups.len());
    for asked in request.groups {
        groups.push(describe(broker, access, asked).await);
    }
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}

async fn describe(
    broker: &Broker,
    access: &Access,
    asked: DescribeShareGroupOffsetsRequestGroup,
) -> DescribeShareGroupOffsetsResponseGroup {
    let name = asked.group_id.to_string();
    let out = DescribeShareGroupOffsetsResponseGroup::default().with_group_id(asked.group_id);
    let refused = |(error, why): (ResponseError, String)| {
        out.clone()
            .with_error_code(error.code())
            .with_error_message(Some(StrBytes::from_string(why)))
    };
    if !access.group(AclOperation::Describe, &name) {
        return refused((
            ResponseError::GroupAuthorizationFailed,
            format!("DESCRIBE on group {name} is not allowed"),
        ));
    }
    let positions = match offsets::positions(broker, &name).await {
        Ok(p) => p,
        Err(refusal) => return refused(refusal),
    };
    let at: HashMap<(&str, i32), i64> = positions
        .iter()
        .map(|p| ((p.topic.as_str(), p.partition), p.committed.offset))
        .collect();
    // Null asks for every partition the group has a start offset on.
    let wanted: Vec<(String, Option<Vec<i32>>)> = match asked.topics {
        Some(topics) => topics
            .into_iter()
            .map(|t| (t.topic_name.to_string(), Some(t.partitions)))
            .collect(),
        None => {
            let mut names: Vec<String> = positions.iter().map(|p| p.topic.clone()).collect();
            names.dedup();
            names.into_iter().map(|n| (n, None)).collect()
        }
    };
    let mut topics = Vec::with_capacity(wanted.len());
    for (topic, indexes) in wanted {
        let all = indexes.is_none();
        let info = offsets::topic(broker, access, AclOperation::Describe, &topic).await;
        let (topic_id, partitions) = match info {
            // Every partition answers the topic's error; unasked, it is left out.
            Err(_) if all => continue,
            Err(code) => (
                Uuid::nil(),
                indexes
                    .unwrap_or_default()
                    .into_iter()
                    .map(|i| partition(i, -1, code))
                    .collect(),
            ),
            Ok(info) => {
                let indexes = indexes.unwrap_or_else(|| {
                    info.partitions
                        .iter()
                        .map(|p| p.kafka_index)
                        .filter(|i| at.contains_key(&(topic.as_str(), *i)))
                        .collect()
                });
                let partitions = indexes
                    .into_iter()
                    .map(|i| {
                        if info.partitions.iter().any(|p| p.kafka_index == i) {
                            let start = at.get(&(topic.as_str(), i)).copied().unwrap_or(-1);
                            partition(i, start, 0)
                        } else {
                            partition(i, -1, ResponseError::UnknownTopicOrPartition.code())
                        }
                    })
                    .collect();
                (info.topic_id, partitions)
            }
        };
        topics.push(
            DescribeShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(StrBytes::from_string(topic)))
                .with_topic_id(topic_id)
                .with_partitions(partitions),
        );
    }
    out.with_topics(topics)
}

/// One partition's answer.
fn partition(index: i32, start: i64, code: i16) -> DescribeShareGroupOffsetsResponsePartition {
    DescribeShareGroupOffsetsResponsePartition::default()
        .with_partition_index(index)
        .with_start_offset(start)
        .with_leader_epoch(if code == 0 { 0 } else { -1 })
        .with_error_code(code)
}
