//! SyncGroup: followers wait for the leader's assignment, which completes
//! the rebalance and answers them all.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::{Group, Ms, Pending, State, SyncAnswer};

impl Group {
    /// SyncGroup.
    pub(crate) fn sync(
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
}
