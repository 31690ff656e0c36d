//! ShareGroupDescribe (KIP-932): each share group's state, epoch and
//! members with their subscriptions and assignments (every partition of
//! the topics they subscribe to). Another kind of group, or an unknown
//! id, is `GROUP_ID_NOT_FOUND`, as Kafka answers.

use kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use storage::Access;

use super::group_describe;
use crate::broker::Broker;
use crate::groups::share::GroupView;

/// Describes each group.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: ShareGroupDescribeRequest,
    access: &Access,
) -> ShareGroupDescribeResponse {
    let asked = request.include_authorized_operations;
    let mut groups = Vec::with_capacity(request.group_ids.len());
    for id in request.group_ids {
        let name = id.to_string();
        let described = match group_describe::refused(broker, access, &name).await {
            Some(refused) => refused,
            None => match broker.groups.share.describe(&name) {
                Some(view) => describe(broker, view)
                    .await
                    .with_authorized_operations(crate::authorized::group(asked, access, &name)),
                None => group_describe::not_found(&name, "share"),
            },
        };
        groups.push(described.with_group_id(id));
    }
    ShareGroupDescribeResponse::default().with_groups(groups)
}

async fn describe(broker: &Broker, view: GroupView) -> DescribedGroup {
    let mut members = Vec::with_capacity(view.members.len());
    for m in view.members {
        let assigned = crate::share::subscribed(broker, &m.topics)
            .await
            .into_iter()
            .map(|q| {
                TopicPartitions::default()
                    .with_topic_id(q.topic_id)
                    .with_topic_name(TopicName(StrBytes::from_string(q.name)))
                    .with_partitions(q.partitions.iter().map(|p| p.kafka_index).collect())
            })
            .collect();
        members.push(
            Member::default()
                .with_member_id(StrBytes::from_string(m.member_id))
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
                .with_assignment(Assignment::default().with_topic_partitions(assigned)),
        );
    }
    DescribedGroup::default()
        .with_group_state(StrBytes::from_static_str(view.state.name()))
        .with_group_epoch(view.epoch)
        .with_assignment_epoch(view.epoch)
        .with_assignor_name(StrBytes::from_static_str("simple"))
        .with_members(members)
}
