//! KIP-932 share groups: membership and share sessions, in memory.
//!
//! The records are not tracked here: a share group is a native consumer
//! group of the same name, and an acquired record is a record leased to
//! that group by the engine (`storage::consume`), so the lock, the
//! redelivery after it and the dead-letter queue are the native ones, and
//! an HTTP consumer of the group works the same queue. What lives here is
//! what the Kafka door adds: members and their epochs, share sessions,
//! and which member acquired which records under which lease (only that
//! member may acknowledge them). A broker that dies loses only this; the
//! leases its members held expire and their records are delivered again.

mod member;
mod session;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::ResponseError;
use storage::PartitionId;
use tokio::time::Instant;

pub(crate) use member::{Heartbeat, HeartbeatAnswer, Member};
pub(crate) use session::{Held, SessionPartition};

pub(crate) use super::group::Ms;
use super::registry::{Membership, Registry};

/// A share group's state, as ShareGroupDescribe and ListGroups name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShareState {
    /// No members.
    Empty,
    /// Members are in.
    Stable,
}

impl ShareState {
    /// The name Kafka gives the state.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Stable => "Stable",
        }
    }
}

/// A member as ShareGroupDescribe shows it.
#[derive(Debug, Clone)]
pub(crate) struct MemberView {
    /// Member id.
    pub(crate) member_id: String,
    /// Rack.
    pub(crate) rack_id: Option<String>,
    /// Its epoch.
    pub(crate) epoch: i32,
    /// Client id.
    pub(crate) client_id: String,
    /// Address.
    pub(crate) client_host: String,
    /// Subscribed topic names.
    pub(crate) topics: BTreeSet<String>,
}

/// A share group as ShareGroupDescribe shows it.
#[derive(Debug, Clone)]
pub(crate) struct GroupView {
    /// Its state.
    pub(crate) state: ShareState,
    /// The group epoch.
    pub(crate) epoch: i32,
    /// Its members.
    pub(crate) members: Vec<MemberView>,
}

#[derive(Debug, Default)]
struct ShareGroup {
    epoch: i32,
    members: BTreeMap<String, Member>,
    empty_since: Ms,
}

impl Membership for ShareGroup {
    fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    fn empty_since(&self) -> Ms {
        self.empty_since
    }
}

impl ShareGroup {
    fn state(&self) -> ShareState {
        if self.members.is_empty() {
            ShareState::Empty
        } else {
            ShareState::Stable
        }
    }

    /// Removes the members silent for `session_ms`; returns what they held.
    fn expire(&mut self, session_ms: i32, now: Ms) -> Vec<(PartitionId, Held)> {
        let gone: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| now - m.last_seen > Ms::from(session_ms))
            .map(|(id, _)| id.clone())
            .collect();
        let mut released = Vec::new();
        for id in gone {
            if let Some(m) = self.members.remove(&id) {
                tracing::info!(member = id, "kafka share group: member session expired");
                released.extend(m.into_held());
                self.epoch += 1;
            }
        }
        if self.members.is_empty() && !released.is_empty() {
            self.empty_since = now;
        }
        released
    }
}

/// The share groups this broker coordinates.
#[derive(Debug)]
pub(crate) struct ShareGroups {
    groups: Registry<ShareGroup>,
    started: Instant,
}

impl Default for ShareGroups {
    fn default() -> Self {
        Self {
            groups: Registry::default(),
            started: Instant::now(),
        }
    }
}

impl ShareGroups {
    /// The clock of sessions and locks.
    pub(crate) fn now(&self) -> Ms {
        Ms::try_from(self.started.elapsed().as_millis()).unwrap_or(Ms::MAX)
    }

    /// Handles a heartbeat: a join (epoch 0), a leave (epoch -1) or a
    /// renewal at the member's epoch. Members silent for `session_ms` are
    /// removed first. The answer carries the records the departed members
    /// held, to be released.
    pub(crate) fn heartbeat(
        &self,
        group_id: &str,
        request: Heartbeat,
        session_ms: i32,
    ) -> HeartbeatAnswer {
        let now = self.now();
        let mut groups = self.groups.lock();
        let known = groups.contains_key(group_id);
        if request.epoch != 0 && !known {
            return HeartbeatAnswer::error(
                ResponseError::UnknownMemberId,
                format!(
                    "member {} is not in share group {group_id}",
                    request.member_id
                ),
            );
        }
        let group = groups.entry(group_id.to_owned()).or_default();
        let mut released = group.expire(session_ms, now);
        let mut answer = member::heartbeat(group, request, now, &mut released);
        if group.members.is_empty() {
            group.empty_since = now;
        }
        answer.released = released;
        answer
    }

    /// Expires silent members everywhere and forgets groups empty for long
    /// enough. What the expired members held comes back to the queue when
    /// its locks end (the timer has no engine to release it sooner).
    pub(crate) fn tick(&self, session_ms: i32) {
        let now = self.now();
        let mut groups = self.groups.lock();
        for group in groups.values_mut() {
            group.expire(session_ms, now);
        }
        Registry::sweep(&mut groups, now);
    }

    /// Runs `f` on a member of a group, or answers `UNKNOWN_MEMBER_ID`.
    pub(crate) fn with_member<T>(
        &self,
        group_id: &str,
        member_id: &str,
        f: impl FnOnce(&mut Member, Ms) -> Result<T, ResponseError>,
    ) -> Result<T, ResponseError> {
        let now = self.now();
        let mut groups = self.groups.lock();
        let member = groups
            .get_mut(group_id)
            .and_then(|g| g.members.get_mut(member_id))
            .ok_or(ResponseError::UnknownMemberId)?;
        f(member, now)
    }

    /// Makes `group` a share group without members, unless it is one
    /// (AlterShareGroupOffsets on a new group creates it, as in Kafka).
    pub(crate) fn adopt(&self, group: &str) {
        let now = self.now();
        self.groups
            .lock()
            .entry(group.to_owned())
            .or_insert_with(|| ShareGroup {
                empty_since: now,
                ..ShareGroup::default()
            });
    }

    /// Whether `group` is a share group (with or without members).
    pub(crate) fn knows(&self, group: &str) -> bool {
        self.groups.knows(group)
    }

    /// Whether `group` is a share group with members.
    pub(crate) fn is_busy(&self, group: &str) -> bool {
        self.groups.is_busy(group)
    }

    /// Forgets an empty share group; returns whether it was one.
    pub(crate) fn forget(&self, group: &str) -> bool {
        self.groups.forget(group)
    }

    /// The group, if it is a share group.
    pub(crate) fn describe(&self, group: &str) -> Option<GroupView> {
        self.groups.lock().get(group).map(|g| GroupView {
            state: g.state(),
            epoch: g.epoch,
            members: g.members.values().map(Member::view).collect(),
        })
    }

    /// Every share group with its state, by id.
    pub(crate) fn list(&self) -> Vec<(String, ShareState)> {
        self.groups
            .lock()
            .iter()
            .map(|(id, g)| (id.clone(), g.state()))
            .collect()
    }
}
