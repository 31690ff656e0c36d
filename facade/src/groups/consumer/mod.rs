//! KIP-848 consumer groups (`group.protocol=consumer`): the broker assigns
//! partitions and moves each member to its share one heartbeat at a time.
//!
//! Like the classic groups, only membership lives here, in memory; the
//! committed offsets are the shared positions in the database. When the
//! coordinator dies its members are told their member ids are unknown at
//! the new one, join again with epoch 0 and resume from the offsets they
//! committed.

mod assignor;
mod group;
mod member;
mod subscription;

use std::collections::BTreeSet;

use kafka_protocol::ResponseError;

pub(crate) use assignor::{Topic, TopicPartition, Topics, ASSIGNORS};
pub(crate) use group::{ConsumerState, Heartbeat, HeartbeatAnswer};
pub(crate) use subscription::Subscription;

use super::group::Ms;
use super::registry::{Membership, Registry};
use group::ConsumerGroup;
use member::Member;

/// A consumer group member as ConsumerGroupDescribe shows it.
#[derive(Debug, Clone)]
pub(crate) struct MemberView {
    /// Member id.
    pub(crate) member_id: String,
    /// `group.instance.id`.
    pub(crate) instance_id: Option<String>,
    /// Rack.
    pub(crate) rack_id: Option<String>,
    /// Its epoch.
    pub(crate) epoch: i32,
    /// Client id.
    pub(crate) client_id: String,
    /// Address.
    pub(crate) client_host: String,
    /// Subscribed topic names.
    pub(crate) topics: Vec<String>,
    /// Subscribed expression.
    pub(crate) regex: Option<String>,
    /// What it owns now.
    pub(crate) assigned: BTreeSet<TopicPartition>,
    /// What it is moving to.
    pub(crate) target: BTreeSet<TopicPartition>,
}

/// A consumer group as ConsumerGroupDescribe and ListGroups show it.
#[derive(Debug, Clone)]
pub(crate) struct GroupView {
    /// Its state.
    pub(crate) state: ConsumerState,
    /// The group epoch.
    pub(crate) epoch: i32,
    /// The epoch of the target assignment.
    pub(crate) assignment_epoch: i32,
    /// The assignor in use.
    pub(crate) assignor: String,
    /// Its members.
    pub(crate) members: Vec<MemberView>,
    /// The topics of the subscriptions, by name.
    pub(crate) topics: Topics,
}

/// The consumer groups this broker coordinates.
#[derive(Debug, Default)]
pub(crate) struct ConsumerGroups {
    groups: Registry<ConsumerGroup>,
}

impl ConsumerGroups {
    /// The topic names the members of `group` subscribe to.
    pub(crate) fn subscriptions(&self, group: &str) -> BTreeSet<String> {
        self.groups
            .lock()
            .get(group)
            .map(ConsumerGroup::subscriptions)
            .unwrap_or_default()
    }

    /// The topics the members of `group` subscribe to, by name or by
    /// expression (those that existed at the last heartbeat).
    pub(crate) fn subscribed_topics(&self, group: &str) -> BTreeSet<String> {
        self.groups
            .lock()
            .get(group)
            .filter(|g| !g.members.is_empty())
            .map(|g| {
                let mut names = g.subscriptions();
                names.extend(g.topics.keys().cloned());
                names
            })
            .unwrap_or_default()
    }

    /// The expressions the members of `group` subscribe with.
    pub(crate) fn regexes(&self, group: &str) -> Vec<Subscription> {
        self.groups
            .lock()
            .get(group)
            .map(ConsumerGroup::regexes)
            .unwrap_or_default()
    }

    /// Handles a heartbeat at `now`. A group is created by a join (epoch
    /// 0); any other epoch in a group this broker does not know is an
    /// unknown member, so members of a group whose coordinator died join
    /// again here.
    pub(crate) fn heartbeat(
        &self,
        group_id: &str,
        request: Heartbeat,
        topics: Topics,
        now: Ms,
    ) -> HeartbeatAnswer {
        let mut groups = self.groups.lock();
        let group = if request.epoch == 0 {
            groups.entry(group_id.to_owned()).or_default()
        } else {
            match groups.get_mut(group_id) {
                Some(g) => g,
                None => {
                    return HeartbeatAnswer::error(
                        ResponseError::UnknownMemberId,
                        format!("member {} is not in the group", request.member_id),
                    )
                }
            }
        };
        let epoch = group.epoch;
        let answer = group.heartbeat(request, topics, now);
        if group.epoch != epoch {
            crate::metrics::KAFKA.rebalanced(group_id);
        }
        answer
    }

    /// Expires members and forgets groups empty for long enough.
    pub(crate) fn tick(&self, session_ms: i32, now: Ms) {
        let mut groups = self.groups.lock();
        for (id, group) in groups.iter_mut() {
            let epoch = group.epoch;
            group.tick(session_ms, now);
            if group.epoch != epoch {
                crate::metrics::KAFKA.rebalanced(id);
            }
        }
        Registry::sweep(&mut groups, now);
    }

    /// `Some(answer)` when `group` is a consumer group: whether a commit of
    /// `epoch` by `member_id` is taken.
    pub(crate) fn commit_check(
        &self,
        group: &str,
        epoch: i32,
        member_id: &str,
    ) -> Option<Option<ResponseError>> {
        self.groups
            .lock()
            .get(group)
            .map(|g| g.commit_check(epoch, member_id))
    }

    /// Whether `group` is a consumer group with members.
    pub(crate) fn is_busy(&self, group: &str) -> bool {
        self.groups.is_busy(group)
    }

    /// Whether `group` is a consumer group (with or without members).
    pub(crate) fn knows(&self, group: &str) -> bool {
        self.groups.knows(group)
    }

    /// Forgets an empty consumer group; returns whether it was one.
    pub(crate) fn forget(&self, group: &str) -> bool {
        self.groups.forget(group)
    }

    /// The group, if it is a consumer group.
    pub(crate) fn describe(&self, group: &str) -> Option<GroupView> {
        self.groups.lock().get(group).map(view)
    }

    /// Every consumer group's view, by id.
    pub(crate) fn views(&self) -> Vec<(String, GroupView)> {
        self.groups
            .lock()
            .iter()
            .map(|(id, g)| (id.clone(), view(g)))
            .collect()
    }

    /// Every consumer group, by id.
    pub(crate) fn list(&self) -> Vec<(String, ConsumerState)> {
        self.groups
            .lock()
            .iter()
            .map(|(id, g)| (id.clone(), g.state()))
            .collect()
    }
}

fn view(g: &ConsumerGroup) -> GroupView {
    let member = |m: &Member| MemberView {
        member_id: m.id.clone(),
        instance_id: m.instance_id.clone(),
        rack_id: m.rack_id.clone(),
        epoch: m.epoch,
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        topics: m.topics.iter().cloned().collect(),
        regex: m.regex.as_ref().map(|r| r.pattern().to_owned()),
        assigned: m.assigned.clone(),
        target: g.target.get(&m.id).cloned().unwrap_or_default(),
    };
    GroupView {
        state: g.state(),
        epoch: g.epoch,
        assignment_epoch: g.assignment_epoch,
        assignor: g.assignor().to_owned(),
        members: g.members.values().map(member).collect(),
        topics: g.topics.clone(),
    }
}

#[cfg(test)]
mod tests;

impl Membership for ConsumerGroup {
    fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    fn empty_since(&self) -> Ms {
        self.empty_since
    }
}
