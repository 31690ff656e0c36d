//! ConsumerGroupDescribe (KIP-848): each consumer group's state, epochs,
//! assignor and members with their current and target assignments. A
//! classic group or an unknown id is `GROUP_ID_NOT_FOUND`, as Kafka answers.

use std::collections::BTreeSet;

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use storage::Access;

use super::group_describe;
use crate::broker::Broker;
use crate::groups::consumer::{GroupView, TopicPartition, Topics};

/// Describes each group.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: ConsumerGroupDescribeRequest,
    access: &Access,
) -> ConsumerGroupDescribeResponse {
    let asked = request.include_authorized_operations;
    let mut groups = Vec::with_capacity(request.group_ids.len());
    for id in request.group_ids {
        let name = id.to_string();
        let described = match group_describe::refused(broker, access, &name).await {
            Some(refused) => refused,
            None => match broker.groups.consumer.describe(&name) {
                Some(view) => describe(version, view)
                    .with_authorized_operations(crate::authorized::group(asked, access, &name)),
                None => group_describe::not_found(&name, "consumer"),
            },
        };
        groups.push(described.with_group_id(id));
    }
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

fn describe(version: i16, view: GroupView) -> DescribedGroup {
    let members = view
        .members
        .into_iter()
        .map(|m| {
            Member::default()
                .with_member_id(StrBytes::from_string(m.member_id))
                .with_instance_id(m.instance_id.map(StrBytes::from_string))
                .with_rack_id(m.rack_id.map(StrBytes::from_string))
                .with_member_epoch(m.epoch)
                .with_client_id(StrBytes::from_string(m.client_id))
                .with_client_host(StrBytes::from_string(m.client_host))
                .with_subscribed_topic_names(
                    m.topics
                        .into_iter()
                        .map(|t| TopicName(StrBytes::from_string(t)))
                        .collect(),
                )
                .with_subscribed_topic_regex(m.regex.map(StrBytes::from_string))
                .with_assignment(assignment(&view.topics, &m.assigned))
                .with_target_assignment(assignment(&view.topics, &m.target))
                // 1: a member of the consumer protocol (v1 only).
                .with_member_type(if version >= 1 { 1 } else { -1 })
        })
        .collect();
    DescribedGroup::default()
        .with_group_state(StrBytes::from_static_str(view.state.name()))
        .with_group_epoch(view.epoch)
        .with_assignment_epoch(view.assignment_epoch)
        .with_assignor_name(StrBytes::from_string(view.assignor))
        .with_members(members)
}

/// Partitions by topic, named from the group's topics.
fn assignment(topics: &Topics, tps: &BTreeSet<TopicPartition>) -> Assignment {
    let mut out: Vec<TopicPartitions> = Vec::new();
    for (topic, partition) in tps {
        match out.last_mut() {
            Some(t) if t.topic_id == *topic => t.partitions.push(*partition),
            _ => {
                let name = topics
                    .iter()
                    .find(|(_, t)| t.id == *topic)
                    .map(|(n, _)| n.clone())
                    .unwrap_or_default();
                out.push(
                    TopicPartitions::default()
                        .with_topic_id(*topic)
                        .with_topic_name(TopicName(StrBytes::from_string(name)))
                        .with_partitions(vec![*partition]),
                );
            }
        }
    }
    Assignment::default().with_topic_partitions(out)
}
