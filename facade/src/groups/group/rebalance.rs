//! Rebalancing: starting one, completing the join phase (leader, protocol,
//! next generation) and the join answers it sends.

use bytes::Bytes;
use kafka_protocol::ResponseError;

use super::{Group, JoinAnswer, Ms, State, SyncAnswer};

impl Group {
    /// Starts a rebalance at `now`: the members must rejoin by the deadline
    /// (after the initial delay when the group was empty).
    pub(super) fn prepare_rebalance(&mut self, now: Ms) {
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

    /// The longest rebalance timeout any member asked for.
    pub(super) fn max_rebalance_timeout(&self) -> Ms {
        self.members
            .values()
            .map(|m| Ms::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    /// Ends the join phase once every member has rejoined (after the delay)
    /// or the deadline passed: picks the leader and protocol, starts the
    /// next generation and answers the parked joins.
    pub(super) fn try_complete_join(&mut self, now: Ms) {
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
            // Kafka keeps the protocol type of a group gone Empty: it is
            // still a consumer group, not a "simple" one.
            self.state = State::Empty;
            self.protocol = None;
            self.empty_since = now;
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
    pub(super) fn current_answer(&self, member_id: &str, skip_assignment: bool) -> JoinAnswer {
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
}
