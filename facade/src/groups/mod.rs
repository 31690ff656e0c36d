//! The group coordinator of this broker: the membership of the consumer
//! groups it coordinates, in memory, with a timer that expires sessions and
//! completes rebalances.
//!
//! Only membership lives here. Committed offsets are in the database, so
//! when this broker dies the groups' members find the new coordinator
//! (FindCoordinator picks it among the live brokers), are told their member
//! ids are unknown, rejoin there and resume from the offsets they committed.

pub(crate) mod consumer;
mod group;
mod member;
mod registry;
pub(crate) mod share;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::time::Instant;

pub use group::Limits;
pub(crate) use group::{JoinAnswer, MemberSummary, State, SyncAnswer};
pub(crate) use member::JoinRequest;

use group::{Group, Ms, Pending};

/// How often sessions and rebalance deadlines are checked.
const TICK: Duration = Duration::from_millis(100);

/// A group as DescribeGroups and ListGroups show it.
#[derive(Debug, Clone)]
pub struct GroupSummary {
    /// Its state.
    pub state: State,
    /// The protocol type its members joined with.
    pub protocol_type: String,
    /// The generation's protocol.
    pub protocol: String,
    /// Its members.
    pub members: Vec<MemberSummary>,
}

/// A KIP-848 consumer group as the dashboard lists it.
#[derive(Debug, Clone)]
pub struct ConsumerGroupSummary {
    /// Its id.
    pub name: String,
    /// Its state's name (`Empty`, `Reconciling`, `Stable`).
    pub state: &'static str,
    /// The server assignor in use.
    pub assignor: String,
    /// Its members.
    pub members: Vec<MemberSummary>,
}

/// The groups this broker coordinates.
#[derive(Debug)]
pub struct Coordinator {
    groups: Mutex<HashMap<String, Group>>,
    /// The KIP-848 consumer groups; a group id is one kind or the other.
    pub(crate) consumer: consumer::ConsumerGroups,
    /// The KIP-932 share groups.
    pub(crate) share: share::ShareGroups,
    limits: Limits,
    started: Instant,
}

impl Coordinator {
    /// A coordinator with no groups.
    pub fn new(limits: Limits) -> Self {
        Self {
            groups: Mutex::new(HashMap::new()),
            consumer: consumer::ConsumerGroups::default(),
            share: share::ShareGroups::default(),
            limits,
            started: Instant::now(),
        }
    }

    /// Expires sessions and completes rebalances until the task is dropped.
    pub async fn run_timers(&self) {
        let mut tick = tokio::time::interval(TICK);
        loop {
            tick.tick().await;
            let now = self.now();
            let mut groups = self.lock();
            for (id, group) in groups.iter_mut() {
                let generation = group.generation();
                group.tick(now);
                count_rebalance(id, generation, group);
            }
            groups.retain(|_, g| !g.is_idle(now));
            drop(groups);
            self.consumer.tick(self.limits.consumer_session_ms, now);
            self.share.tick(self.limits.consumer_session_ms);
        }
    }

    /// JoinGroup; waits for the rebalance when the member must.
    pub async fn join(&self, group_id: &str, request: JoinRequest) -> JoinAnswer {
        let member_id = request.member_id.clone();
        let failed = |error| JoinAnswer::error(error, &member_id);
        // A consumer group with members takes no classic members; an empty
        // one becomes a classic group (its offsets stay).
        if self.consumer.is_busy(group_id) {
            return failed(ResponseError::InconsistentGroupProtocol);
        }
        self.consumer.forget(group_id);
        let answer = match self.with_group(group_id, true, |g, now| g.join(request, now)) {
            Some(Pending::Now(answer)) => answer,
            Some(Pending::Later(rx)) => rx
                .await
                .unwrap_or_else(|_| failed(ResponseError::UnknownMemberId)),
            // `create` always finds the group; answer something retriable anyway.
            None => failed(ResponseError::CoordinatorNotAvailable),
        };
        tracing::debug!(
            group = group_id,
            member = %answer.member_id,
            generation = answer.generation,
            error = ?answer.error,
            leader = %answer.leader,
            "kafka group: join answered"
        );
        answer
    }

    /// SyncGroup; waits for the leader's assignment when it must.
    pub async fn sync(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        protocol: (Option<&str>, Option<&str>),
        assignments: Vec<(String, Bytes)>,
    ) -> SyncAnswer {
        let pending = self.with_group(group_id, false, |g, now| {
            g.sync(
                generation,
                member_id,
                instance_id,
                protocol,
                assignments,
                now,
            )
        });
        let unknown = || SyncAnswer::error(ResponseError::UnknownMemberId);
        let answer = match pending {
            Some(Pending::Now(answer)) => answer,
            Some(Pending::Later(rx)) => rx.await.unwrap_or_else(|_| unknown()),
            None => unknown(),
        };
        tracing::debug!(
            group = group_id,
            member = member_id,
            generation,
            error = ?answer.error,
            "kafka group: sync answered"
        );
        answer
    }

    /// Heartbeat: `None` when the member is in good standing.
    pub fn heartbeat(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Option<ResponseError> {
        let error = self
            .with_group(group_id, false, |g, now| {
                g.heartbeat(generation, member_id, instance_id, now)
            })
            .unwrap_or(Some(ResponseError::UnknownMemberId));
        if error.is_some() {
            tracing::debug!(
                group = group_id,
                member = member_id,
                generation,
                ?error,
                "kafka group: heartbeat refused"
            );
        }
        error
    }

    /// LeaveGroup: an answer per leaving member.
    pub fn leave(
        &self,
        group_id: &str,
        leaving: &[(String, Option<String>)],
    ) -> Vec<Option<ResponseError>> {
        self.with_group(group_id, false, |g, now| g.leave(leaving, now))
            .unwrap_or_else(|| vec![Some(ResponseError::UnknownMemberId); leaving.len()])
    }

    /// Whether an OffsetCommit of this generation and member may be stored:
    /// a group without members accepts commits of generation -1 only.
    pub fn commit_check(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Option<ResponseError> {
        if let Some(answer) = self.consumer.commit_check(group_id, generation, member_id) {
            return answer;
        }
        self.with_group(group_id, false, |g, now| {
            g.commit_check(generation, member_id, instance_id, now)
        })
        .unwrap_or_else(|| (generation >= 0).then_some(ResponseError::IllegalGeneration))
    }

    /// The group's membership, if it has any.
    pub fn describe(&self, group_id: &str) -> Option<GroupSummary> {
        self.expire(group_id);
        self.lock().get(group_id).map(summary)
    }

    /// Every group with members, by id.
    pub fn list(&self) -> Vec<(String, GroupSummary)> {
        self.lock()
            .iter()
            .map(|(id, g)| (id.clone(), summary(g)))
            .collect()
    }

    /// Every KIP-848 consumer group (its members carry no metadata or
    /// assignment bytes: the broker assigns).
    pub fn consumer_groups(&self) -> Vec<ConsumerGroupSummary> {
        self.consumer
            .views()
            .into_iter()
            .map(|(name, view)| ConsumerGroupSummary {
                name,
                state: view.state.name(),
                assignor: view.assignor,
                members: view
                    .members
                    .into_iter()
                    .map(|m| MemberSummary {
                        member_id: m.member_id,
                        instance_id: m.instance_id,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        metadata: Bytes::new(),
                        assignment: Bytes::new(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// The subscription metadata of the members of a group (empty when it
    /// has none), for OffsetDelete.
    pub fn member_metadata(&self, group_id: &str) -> Vec<Bytes> {
        self.lock()
            .get(group_id)
            .filter(|g| g.protocol_type() == Some("consumer"))
            .map(Group::member_metadata)
            .unwrap_or_default()
    }

    /// Whether the group has members or members on their way in (it
    /// cannot be deleted then).
    pub fn has_members(&self, group_id: &str) -> bool {
        self.expire(group_id);
        self.lock().get(group_id).is_some_and(Group::is_busy)
            || self.consumer.is_busy(group_id)
            || self.share.is_busy(group_id)
    }

    /// Whether a classic group with members (or on their way in) has this id.
    pub(crate) fn has_classic(&self, group_id: &str) -> bool {
        self.lock().get(group_id).is_some_and(Group::is_busy)
    }

    /// Whether `group_id` is a group of another kind than a share group: a
    /// KIP-848 consumer group, or a classic group with members. The share
    /// APIs answer such a group `GROUP_ID_NOT_FOUND`, as Kafka does.
    pub(crate) fn is_other_than_share(&self, group_id: &str) -> bool {
        self.consumer.knows(group_id) || self.has_classic(group_id)
    }

    /// Forgets an Empty group (DeleteGroups); returns whether it was known.
    pub fn forget(&self, group_id: &str) -> bool {
        if self.consumer.forget(group_id) || self.share.forget(group_id) {
            return true;
        }
        let mut groups = self.lock();
        match groups.get(group_id) {
            Some(g) if !g.is_busy() => groups.remove(group_id).is_some(),
            _ => false,
        }
    }

    /// ConsumerGroupHeartbeat. A classic group with members is not a
    /// consumer group (`GROUP_ID_NOT_FOUND`, as Kafka answers); an empty
    /// classic group becomes one, keeping its offsets.
    pub(crate) fn consumer_heartbeat(
        &self,
        group_id: &str,
        request: consumer::Heartbeat,
        topics: consumer::Topics,
    ) -> consumer::HeartbeatAnswer {
        {
            let mut groups = self.lock();
            match groups.get(group_id) {
                Some(g) if g.is_busy() => {
                    return consumer::HeartbeatAnswer::error(
                        ResponseError::GroupIdNotFound,
                        format!("group {group_id} is a classic group"),
                    )
                }
                Some(_) => {
                    groups.remove(group_id);
                }
                None => {}
            }
        }
        self.consumer
            .heartbeat(group_id, request, topics, self.now())
    }

    /// The session timeout of share group members (the KIP-848 one:
    /// Kafka's `group.share.session.timeout.ms` has the same default).
    pub(crate) fn share_session_ms(&self) -> i32 {
        self.limits.consumer_session_ms
    }

    /// The heartbeat interval KIP-848 members are told.
    pub(crate) fn consumer_heartbeat_ms(&self) -> i32 {
        self.limits.consumer_heartbeat_ms
    }

    /// Removes the group's members whose session ran out by now, as the
    /// timer would on its next tick: a session ends at its deadline, as
    /// Kafka's timer ends it, not up to a tick later (librdkafka's 0081
    /// test deletes a group of closed static members one session after
    /// they closed).
    fn expire(&self, group_id: &str) {
        self.with_group(group_id, false, Group::tick);
    }

    fn with_group<T>(
        &self,
        group_id: &str,
        create: bool,
        f: impl FnOnce(&mut Group, Ms) -> T,
    ) -> Option<T> {
        let now = self.now();
        let mut groups = self.lock();
        let group = if create {
            groups
                .entry(group_id.to_owned())
                .or_insert_with(|| Group::new(self.limits))
        } else {
            groups.get_mut(group_id)?
        };
        let generation = group.generation();
        let answer = f(group, now);
        count_rebalance(group_id, generation, group);
        if group.is_idle(now) {
            groups.remove(group_id);
        }
        Some(answer)
    }

    fn now(&self) -> Ms {
        Ms::try_from(self.started.elapsed().as_millis()).unwrap_or(Ms::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Group>> {
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counts a rebalance of `id` when `group` moved past `generation`.
fn count_rebalance(id: &str, generation: i32, group: &Group) {
    if group.generation() != generation {
        crate::metrics::KAFKA.rebalanced(id);
    }
}

fn summary(g: &Group) -> GroupSummary {
    GroupSummary {
        state: g.state(),
        protocol_type: g.protocol_type().unwrap_or_default().to_owned(),
        protocol: g.protocol().unwrap_or_default().to_owned(),
        members: g.describe(),
    }
}
