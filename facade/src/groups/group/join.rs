//! JoinGroup: the member-id handshake, new and returning members, static
//! members rejoining under a new id, and parking each joiner until the
//! rebalance completes.

use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::{Group, JoinAnswer, Ms, Pending, State, SyncAnswer};
use crate::groups::member::{JoinRequest, Member};

impl Group {
    /// JoinGroup.
    pub(crate) fn join(&mut self, request: JoinRequest, now: Ms) -> Pending<JoinAnswer> {
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
}
