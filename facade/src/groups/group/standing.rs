//! Calls from members in good standing: Heartbeat and the OffsetCommit
//! check, and the fencing and generation checks they share with SyncGroup
//! and LeaveGroup.

use kafka_protocol::ResponseError;

use super::{Group, Ms, State};

impl Group {
    /// Notes that member `id` called at `now` (its session starts again).
    pub(super) fn touch(&mut self, id: &str, now: Ms) {
        if let Some(m) = self.members.get_mut(id) {
            m.last_heard = now;
        }
    }

    /// Heartbeat: `None` when the member is in good standing.
    pub(crate) fn heartbeat(
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
    pub(crate) fn commit_check(
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

    /// `FENCED_INSTANCE_ID` when `instance_id` belongs to another member id.
    pub(super) fn fenced(
        &self,
        instance_id: Option<&str>,
        member_id: &str,
    ) -> Option<ResponseError> {
        let instance = instance_id?;
        match self.statics.get(instance) {
            Some(current) if current != member_id => Some(ResponseError::FencedInstanceId),
            _ => None,
        }
    }

    /// The error of a call from a member of a given generation, if any.
    pub(super) fn member_error(
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
}
