//! Members leaving: LeaveGroup, sessions expiring and syncs overdue on the
//! timer's tick, and the rebalance of those who stay.

use kafka_protocol::ResponseError;

use super::{Group, Ms, State};

impl Group {
    /// LeaveGroup for each (member id, instance id); an empty member id
    /// with an instance id removes that static member (an admin's removal).
    pub(crate) fn leave(
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
    pub(crate) fn tick(&mut self, now: Ms) {
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
    pub(super) fn remove_member(&mut self, id: &str) {
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
}
