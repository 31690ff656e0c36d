//! One consumer group under Kafka's classic group protocol: members, the
//! generation, the chosen protocol and the assignments, moved through
//! Empty → PreparingRebalance → CompletingRebalance → Stable by JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup and the passing of time.
//!
//! Pure state: every call takes the time (`now`, milliseconds on a
//! monotonic clock) and answers at once or hands back a receiver that the
//! group answers when the rebalance completes, so the rules can be tested
//! without sockets or sleeps. It follows Kafka's `GroupCoordinator`
//! closely, because that is what clients were written against.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::member::{JoinRequest, Member};

/// Milliseconds on the coordinator's monotonic clock.
pub type Ms = i64;

/// Where a group is in its rebalance cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No members (it may still have committed offsets).
    Empty,
    /// Waiting for the members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
}

impl State {
    /// The name Kafka gives the state in DescribeGroups and ListGroups.
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::PreparingRebalance => "PreparingRebalance",
            Self::CompletingRebalance => "CompletingRebalance",
            Self::Stable => "Stable",
        }
    }
}

/// The answer to a JoinGroup.
#[derive(Debug, Clone, Default)]
pub struct JoinAnswer {
    /// `None` on success.
    pub error: Option<ResponseError>,
    /// The generation the member joined (-1 on error).
    pub generation: i32,
    /// The group's protocol type.
    pub protocol_type: Option<String>,
    /// The protocol chosen for this generation.
    pub protocol: Option<String>,
    /// The leader's member id.
    pub leader: String,
    /// The member's id (also given with `MEMBER_ID_REQUIRED`).
    pub member_id: String,
    /// For the leader: every member's (id, instance id, metadata of the
    /// chosen protocol); empty for followers.
    pub members: Vec<(String, Option<String>, Bytes)>,
    /// The leader already has its assignment and must not compute one
    /// (a static leader rejoining a stable group).
    pub skip_assignment: bool,
}

impl JoinAnswer {
    /// A failed join of `member_id`.
    pub fn error(error: ResponseError, member_id: &str) -> Self {
        Self {
            error: Some(error),
            generation: -1,
            member_id: member_id.to_owned(),
            ..Self::default()
        }
    }
}

/// The answer to a SyncGroup.
#[derive(Debug, Clone, Default)]
pub struct SyncAnswer {
    /// `None` on success.
    pub error: Option<ResponseError>,
    /// The group's protocol type.
    pub protocol_type: Option<String>,
    /// The generation's protocol.
    pub protocol: Option<String>,
    /// The member's assignment, as the leader encoded it.
    pub assignment: Bytes,
}

impl SyncAnswer {
    /// A failed sync.
    pub fn error(error: ResponseError) -> Self {
        Self {
            error: Some(error),
            ..Self::default()
        }
    }
}

/// An answer now, or one the group sends when the rebalance moves on.
#[derive(Debug)]
pub enum Pending<T> {
    /// Answered.
    Now(T),
    /// Answered when the rebalance completes (a dropped sender means the
    /// member was removed meanwhile).
    Later(oneshot::Receiver<T>),
}

/// The limits a coordinator applies to every group.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The shortest session timeout a member may ask for.
    pub min_session_ms: i32,
    /// The longest session timeout a member may ask for.
    pub max_session_ms: i32,
    /// How long the first rebalance of an empty group waits for more
    /// members (Kafka's `group.initial.rebalance.delay.ms`).
    pub initial_delay_ms: i32,
}

/// A described member.
#[derive(Debug, Clone)]
pub struct MemberSummary {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub instance_id: Option<String>,
    /// The client id it joined with.
    pub client_id: String,
    /// The address it joined from.
    pub client_host: String,
    /// Its metadata for the chosen protocol (stable groups only).
    pub metadata: Bytes,
    /// Its assignment (stable groups only).
    pub assignment: Bytes,
}

/// One group's membership.
#[derive(Debug)]
pub struct Group {
    state: State,
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    members: HashMap<String, Member>,
    /// Member ids handed out with `MEMBER_ID_REQUIRED`, until they expire.
    pending: HashMap<String, Ms>,
    /// Static instance id → its current member id.
    statics: HashMap<String, String>,
    /// A rebalance completes by then even if members are missing; after it,
    /// the members that have not synced by then are removed.
    deadline: Ms,
    /// The first rebalance of an empty group does not complete before.
    delay_until: Ms,
    /// Whether the current rebalance started from Empty (the initial delay
    /// applies and grows as members arrive).
    initial: bool,
    next_seq: u64,
    limits: Limits,
}

impl Group {
    /// An empty group.
    pub fn new(limits: Limits) -> Self {
        Self {
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: HashMap::new(),
            pending: HashMap::new(),
            statics: HashMap::new(),
            deadline: 0,
            delay_until: 0,
            initial: false,
            next_seq: 0,
            limits,
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The current generation.
    #[cfg(test)]
    pub fn generation(&self) -> i32 {
        self.generation
    }

    /// The protocol type members joined with.
    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }

    /// The generation's protocol.
    pub fn protocol(&self) -> Option<&str> {
        self.protocol.as_deref()
    }

    /// Whether nothing is left worth keeping in memory.
    pub fn is_idle(&self) -> bool {
        self.state == State::Empty && self.members.is_empty() && self.pending.is_empty()
    }

    /// The members, in join order, with metadata and assignments only when
    /// the group is stable (as Kafka describes them).
    pub fn describe(&self) -> Vec<MemberSummary> {
        let stable = self.state == State::Stable;
        self.in_join_order()
            .into_iter()
            .map(|m| MemberSummary {
                member_id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    self.protocol
                        .as_deref()
                        .and_then(|p| m.metadata(p))
                        .unwrap_or_default()
                } else {
                    Bytes::new()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Bytes::new()
                },
            })
            .collect()
    }

    /// Every member's subscription metadata for the generation's protocol.
    pub fn member_metadata(&self) -> Vec<Bytes> {
        let Some(protocol) = self.protocol.as_deref() else {
            return Vec::new();
        };
        self.members
            .values()
            .filter_map(|m| m.metadata(protocol))
            .collect()
    }

    /// JoinGroup.
    pub fn join(&mut self, request: JoinRequest, now: Ms) -> Pending<JoinAnswer> {
        let limits = self.limits;
        if !(limits.min_session_ms..=limits.max_session_ms).contains(&request.session_timeout_ms) {
            return Pending::Now(JoinAnswer::error(
                ResponseError::InvalidSessionTimeout,
                &request.member_id,
            ));
        }
        if !self.supports(&request) {
            return Pending::Now(JoinAnswer::error(
                ResponseError::InconsistentGroupProtocol,
                &request.member_id,
            ));
        }
        if request.member_id.is_empty() {
            return self.join_unknown(request, now);
        }
        if let Some(error) = self.fenced(request.instance_id.as_deref(), &request.member_id) {
            return Pending::Now(JoinAnswer::error(error, &request.member_id));
        }
        if self.pending.remove(&request.member_id).is_some() {
            return self.add_member(request.member_id.clone(), request, now);
        }
        let Some(member) = self.members.get_mut(&request.member_id) else {
            return Pending::Now(JoinAnswer::error(
                ResponseError::UnknownMemberId,
                &request.member_id,
            ));
        };
        let unchanged = member.protocols == request.protocols;
        let is_leader = self.leader.as_deref() == Some(request.member_id.as_str());
        member.last_heard = now;
        match self.state {
            State::CompletingRebalance | State::Stable
                if unchanged && !(is_leader && self.state == State::Stable) =>
            {
                // A repeated join (e.g. a lost answer): the same generation again.
                let id = request.member_id.clone();
                Pending::Now(self.current_answer(&id, false))
            }
            _ => {
                let id = request.member_id.clone();
                if let Some(member) = self.members.get_mut(&id) {
                    member.update(&request);
                }
                self.await_join(&id, now)
            }
        }
    }

    /// A join without a member id: a new member, a static member coming
    /// back, or the first round of the member-id handshake.
    fn join_unknown(&mut self, request: JoinRequest, now: Ms) -> Pending<JoinAnswer> {
        let new_id = match &request.instance_id {
            Some(instance) => format!("{instance}-{}", uuid::Uuid::new_v4()),
            None => format!("{}-{}", request.client_id, uuid::Uuid::new_v4()),
        };
        if let Some(instance) = request.instance_id.clone() {
            if let Some(old_id) = self.statics.get(&instance).cloned() {
                return self.replace_static(&old_id, new_id, request, now);
            }
            self.statics.insert(instance, new_id.clone());
            return self.add_member(new_id, request, now);
        }
        if request.require_known_member_id {
            let expires = now + Ms::from(request.session_timeout_ms);
            self.pending.insert(new_id.clone(), expires);
            return Pending::Now(JoinAnswer::error(ResponseError::MemberIdRequired, &new_id));
        }
        self.add_member(new_id, request, now)
    }

    /// A static member rejoined under a new member id: the old id is fenced,
    /// and a stable group with unchanged protocols does not rebalance.
    fn replace_static(
        &mut self,
        old_id: &str,
        new_id: String,
        request: JoinRequest,
        now: Ms,
    ) -> Pending<JoinAnswer> {
        let Some(mut member) = self.members.remove(old_id) else {
            // The table and the members disagree only if a removal was
            // half done; treat the instance as new.
            if let Some(instance) = request.instance_id.clone() {
                self.statics.insert(instance, new_id.clone());
            }
            return self.add_member(new_id, request, now);
        };
        if let Some(waiter) = member.awaiting_join.take() {
            let _ = waiter.send(JoinAnswer::error(ResponseError::FencedInstanceId, old_id));
        }
        if let Some(waiter) = member.awaiting_sync.take() {
            let _ = waiter.send(SyncAnswer::error(ResponseError::FencedInstanceId));
        }
        let unchanged = member.protocols == request.protocols;
        member.id = new_id.clone();
        member.update(&request);
        member.last_heard = now;
        if let Some(instance) = &request.instance_id {
            self.statics.insert(instance.clone(), new_id.clone());
        }
        if self.leader.as_deref() == Some(old_id) {
            self.leader = Some(new_id.clone());
        }
        self.members.insert(new_id.clone(), member);
        if self.state == State::Stable && unchanged {
            let is_leader = self.leader.as_deref() == Some(new_id.as_str());
            return Pending::Now(self.current_answer(&new_id, is_leader));
        }
        self.await_join(&new_id, now)
    }

    fn add_member(&mut self, id: String, request: JoinRequest, now: Ms) -> Pending<JoinAnswer> {
        let member = Member::new(id.clone(), &request, self.next_seq, now);
        self.next_seq += 1;
        if self.members.is_empty() {
            self.protocol_type = Some(request.protocol_type.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(id.clone());
        }
        self.members.insert(id.clone(), member);
        if self.state == State::PreparingRebalance {
            if self.initial {
                // Each arrival during the first rebalance waits a little
                // longer for the next, up to the rebalance timeout.
                self.delay_until =
                    (now + Ms::from(self.limits.initial_delay_ms)).min(self.deadline.max(now));
            }
            self.deadline = self.deadline.max(now + self.max_rebalance_timeout());
        }
        self.await_join(&id, now)
    }

    /// Parks member `id` in its JoinGroup until the rebalance completes,
    /// starting one unless one is under way.
    fn await_join(&mut self, id: &str, now: Ms) -> Pending<JoinAnswer> {
        let (tx, rx) = oneshot::channel();
        if let Some(member) = self.members.get_mut(id) {
            member.awaiting_join = Some(tx);
        }
        if self.state != State::PreparingRebalance {
            self.prepare_rebalance(now);
        }
        self.try_complete_join(now);
        Pending::Later(rx)
    }

    /// Notes that member `id` called at `now` (its session starts again).
    fn touch(&mut self, id: &str, now: Ms) {
        if let Some(m) = self.members.get_mut(id) {
            m.last_heard = now;
        }
    }

    /// SyncGroup.
    pub fn sync(
        &mut self,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        protocol: (Option<&str>, Option<&str>),
        assignments: Vec<(String, Bytes)>,
        now: Ms,
    ) -> Pending<SyncAnswer> {
        if let Some(error) = self.member_error(generation, member_id, instance_id) {
            return Pending::Now(SyncAnswer::error(error));
        }
        let (protocol_type, protocol_name) = protocol;
        if protocol_type.is_some_and(|t| Some(t) != self.protocol_type.as_deref())
            || protocol_name.is_some_and(|p| Some(p) != self.protocol.as_deref())
        {
            return Pending::Now(SyncAnswer::error(ResponseError::InconsistentGroupProtocol));
        }
        match self.state {
            State::Empty => Pending::Now(SyncAnswer::error(ResponseError::UnknownMemberId)),
            State::PreparingRebalance => {
                Pending::Now(SyncAnswer::error(ResponseError::RebalanceInProgress))
            }
            State::Stable => {
                self.touch(member_id, now);
                Pending::Now(self.sync_answer(member_id))
            }
            State::CompletingRebalance => {
                self.touch(member_id, now);
                if self.leader.as_deref() != Some(member_id) {
                    let (tx, rx) = oneshot::channel();
                    if let Some(m) = self.members.get_mut(member_id) {
                        m.awaiting_sync = Some(tx);
                    }
                    return Pending::Later(rx);
                }
                let mut assignments: HashMap<String, Bytes> = assignments.into_iter().collect();
                for m in self.members.values_mut() {
                    m.assignment = assignments.remove(&m.id).unwrap_or_default();
                }
                self.state = State::Stable;
                let waiting: Vec<String> = self
                    .members
                    .values()
                    .filter(|m| m.awaiting_sync.is_some())
                    .map(|m| m.id.clone())
                    .collect();
                for id in waiting {
                    let answer = self.sync_answer(&id);
                    if let Some(waiter) = self
                        .members
                        .get_mut(&id)
                        .and_then(|m| m.awaiting_sync.take())
                    {
                        let _ = waiter.send(answer);
                    }
                }
                Pending::Now(self.sync_answer(member_id))
            }
        }
    }

    /// Heartbeat: `None` when the member is in good standing.
    pub fn heartbeat(
        &mut self,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        now: Ms,
    ) -> Option<ResponseError> {
        if let Some(error) = self.member_error(generation, member_id, instance_id) {
            return Some(error);
        }
        self.touch(member_id, now);
        match self.state {
            State::Empty => Some(ResponseError::UnknownMemberId),
            State::PreparingRebalance => Some(ResponseError::RebalanceInProgress),
            State::CompletingRebalance | State::Stable => None,
        }
    }

    /// Whether an OffsetCommit from this member (or, with generation -1 and
    /// no member, from an admin or a self-assigning consumer) is accepted.
    pub fn commit_check(
        &mut self,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        now: Ms,
    ) -> Option<ResponseError> {
        if generation < 0 && self.state == State::Empty {
            return None;
        }
        if self.state == State::CompletingRebalance {
            return Some(ResponseError::RebalanceInProgress);
        }
        if let Some(error) = self.member_error(generation, member_id, instance_id) {
            return Some(error);
        }
        self.touch(member_id, now);
        None
    }

    /// LeaveGroup for each (member id, instance id); an empty member id
    /// with an instance id removes that static member (an admin's removal).
    pub fn leave(
        &mut self,
        leaving: &[(String, Option<String>)],
        now: Ms,
    ) -> Vec<Option<ResponseError>> {
        let mut removed = false;
        let answers = leaving
            .iter()
            .map(|(member_id, instance_id)| {
                let target = match (member_id.is_empty(), instance_id) {
                    (true, Some(instance)) => match self.statics.get(instance) {
                        Some(id) => id.clone(),
                        None => return Some(ResponseError::UnknownMemberId),
                    },
                    _ => member_id.clone(),
                };
                if let Some(error) = self.fenced(instance_id.as_deref(), &target) {
                    return Some(error);
                }
                if self.pending.remove(&target).is_some() {
                    return None;
                }
                if !self.members.contains_key(&target) {
                    return Some(ResponseError::UnknownMemberId);
                }
                self.remove_member(&target);
                removed = true;
                None
            })
            .collect();
        if removed {
            self.after_removal(now);
        }
        answers
    }

    /// Removes members whose session ran out, forgets member ids handed out
    /// and never used, and completes a rebalance whose time has come.
    pub fn tick(&mut self, now: Ms) {
        self.pending.retain(|_, expires| *expires > now);
        let sync_overdue = self.state == State::CompletingRebalance && now >= self.deadline;
        let gone: Vec<(String, &str)> = self
            .members
            .values()
            .filter_map(|m| {
                if !m.keep_alive(now) {
                    Some((m.id.clone(), "session expired"))
                } else if sync_overdue && m.awaiting_sync.is_none() {
                    Some((m.id.clone(), "no SyncGroup within the rebalance timeout"))
                } else {
                    None
                }
            })
            .collect();
        for (id, why) in &gone {
            tracing::info!(member = %id, "kafka group: {why}");
            self.remove_member(id);
        }
        if gone.is_empty() {
            self.try_complete_join(now);
        } else {
            self.after_removal(now);
        }
    }

    /// Takes a member out; its waiting join or sync, if any, ends with the
    /// dropped sender (answered `UNKNOWN_MEMBER_ID`).
    fn remove_member(&mut self, id: &str) {
        if let Some(member) = self.members.remove(id) {
            if let Some(instance) = &member.instance_id {
                if self.statics.get(instance).map(String::as_str) == Some(id) {
                    self.statics.remove(instance);
                }
            }
        }
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
    }

    /// After members were taken out: the rest rebalance without them (at
    /// once when none is left).
    fn after_removal(&mut self, now: Ms) {
        if matches!(self.state, State::Stable | State::CompletingRebalance) {
            self.prepare_rebalance(now);
        }
        self.try_complete_join(now);
    }

    fn prepare_rebalance(&mut self, now: Ms) {
        if self.state == State::CompletingRebalance {
            // Assignments of the abandoned generation are void.
            for m in self.members.values_mut() {
                m.assignment = Bytes::new();
                if let Some(waiter) = m.awaiting_sync.take() {
                    let _ = waiter.send(SyncAnswer::error(ResponseError::RebalanceInProgress));
                }
            }
        }
        self.initial = self.state == State::Empty;
        self.delay_until = if self.initial {
            now + Ms::from(self.limits.initial_delay_ms)
        } else {
            now
        };
        self.deadline = now + self.max_rebalance_timeout();
        self.delay_until = self.delay_until.min(self.deadline);
        self.state = State::PreparingRebalance;
    }

    fn max_rebalance_timeout(&self) -> Ms {
        self.members
            .values()
            .map(|m| Ms::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    fn try_complete_join(&mut self, now: Ms) {
        if self.state != State::PreparingRebalance {
            return;
        }
        let all_joined =
            self.pending.is_empty() && self.members.values().all(|m| m.awaiting_join.is_some());
        if !((all_joined && now >= self.delay_until) || now >= self.deadline) {
            return;
        }
        // Dynamic members that did not rejoin in time are out; static ones
        // keep their place until their session expires.
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.instance_id.is_none())
            .map(|m| m.id.clone())
            .collect();
        for id in &gone {
            self.remove_member(id);
        }
        self.pending.clear();
        if self.members.is_empty() {
            self.generation += 1;
            self.state = State::Empty;
            self.protocol = None;
            self.protocol_type = None;
            return;
        }
        let leader_joined = self
            .leader
            .as_ref()
            .and_then(|l| self.members.get(l))
            .is_some_and(|m| m.awaiting_join.is_some());
        if !leader_joined {
            let Some(new_leader) = self
                .in_join_order()
                .into_iter()
                .find(|m| m.awaiting_join.is_some())
                .map(|m| m.id.clone())
            else {
                // Only static members that have not rejoined: wait for them
                // (or for their sessions to expire).
                self.deadline = now + self.max_rebalance_timeout();
                return;
            };
            self.leader = Some(new_leader);
        }
        self.generation += 1;
        self.protocol = self.select_protocol();
        self.state = State::CompletingRebalance;
        self.deadline = now + self.max_rebalance_timeout();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let answer = self.current_answer(&id, false);
            if let Some(m) = self.members.get_mut(&id) {
                m.last_heard = now;
                if let Some(waiter) = m.awaiting_join.take() {
                    let _ = waiter.send(answer);
                }
            }
        }
    }

    /// The join answer of the current generation; the leader gets the
    /// members' metadata.
    fn current_answer(&self, member_id: &str, skip_assignment: bool) -> JoinAnswer {
        let leader = self.leader.clone().unwrap_or_default();
        let members = if leader == member_id {
            let protocol = self.protocol.as_deref().unwrap_or_default();
            self.in_join_order()
                .into_iter()
                .map(|m| {
                    (
                        m.id.clone(),
                        m.instance_id.clone(),
                        m.metadata(protocol).unwrap_or_default(),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        JoinAnswer {
            error: None,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            leader,
            member_id: member_id.to_owned(),
            members,
            skip_assignment,
        }
    }

    fn sync_answer(&self, member_id: &str) -> SyncAnswer {
        SyncAnswer {
            error: None,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            assignment: self
                .members
                .get(member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default(),
        }
    }

    /// The protocol every member supports that most members prefer (ties
    /// go to the earliest joined member's preference).
    fn select_protocol(&self) -> Option<String> {
        let members = self.in_join_order();
        let first = members.first()?;
        let candidates: Vec<&str> = first
            .protocols
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| members.iter().all(|m| m.metadata(name).is_some()))
            .collect();
        let votes = |name: &str| {
            members
                .iter()
                .filter(|m| {
                    m.protocols
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .find(|n| candidates.contains(n))
                        == Some(name)
                })
                .count()
        };
        let mut best: Option<(&str, usize)> = None;
        for name in &candidates {
            let v = votes(name);
            if best.is_none_or(|(_, b)| v > b) {
                best = Some((name, v));
            }
        }
        best.map(|(name, _)| name.to_owned())
    }

    /// Whether a joining member can be in this group: the same protocol
    /// type, and at least one protocol every member supports.
    fn supports(&self, request: &JoinRequest) -> bool {
        if request.protocol_type.is_empty() || request.protocols.is_empty() {
            return false;
        }
        let others: Vec<&Member> = self
            .members
            .values()
            .filter(|m| m.id != request.member_id)
            .collect();
        if others.is_empty() {
            return true;
        }
        self.protocol_type.as_deref() == Some(request.protocol_type.as_str())
            && request
                .protocols
                .iter()
                .any(|(name, _)| others.iter().all(|m| m.metadata(name).is_some()))
    }

    /// `FENCED_INSTANCE_ID` when `instance_id` belongs to another member id.
    fn fenced(&self, instance_id: Option<&str>, member_id: &str) -> Option<ResponseError> {
        let instance = instance_id?;
        match self.statics.get(instance) {
            Some(current) if current != member_id => Some(ResponseError::FencedInstanceId),
            _ => None,
        }
    }

    /// The error of a call from a member of a given generation, if any.
    fn member_error(
        &self,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Option<ResponseError> {
        if let Some(error) = self.fenced(instance_id, member_id) {
            return Some(error);
        }
        if !self.members.contains_key(member_id) {
            return Some(ResponseError::UnknownMemberId);
        }
        if generation != self.generation {
            return Some(ResponseError::IllegalGeneration);
        }
        None
    }

    fn in_join_order(&self) -> Vec<&Member> {
        let mut members: Vec<&Member> = self.members.values().collect();
        members.sort_by_key(|m| m.seq);
        members
    }
}
