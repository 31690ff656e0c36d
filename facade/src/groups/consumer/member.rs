//! A member of a KIP-848 consumer group and its reconciliation: how its
//! assignment moves towards the group's target one heartbeat at a time,
//! revoking before anything it loses is given to another member.

use std::collections::BTreeSet;

use super::assignor::TopicPartition;
use super::subscription::Subscription;
use crate::groups::group::Ms;

/// A member of a consumer group.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// Its member id.
    pub(crate) id: String,
    /// Its epoch: the assignment epoch it last reconciled to.
    pub(crate) epoch: i32,
    /// Its epoch before the last bump (a member whose answer was lost may
    /// still use it).
    pub(crate) previous_epoch: i32,
    /// `group.instance.id` it gave.
    pub(crate) instance_id: Option<String>,
    /// Its rack.
    pub(crate) rack_id: Option<String>,
    /// The client id of its requests.
    pub(crate) client_id: String,
    /// The address it heartbeats from.
    pub(crate) client_host: String,
    /// How long it may take to revoke partitions.
    pub(crate) rebalance_timeout_ms: i32,
    /// The topic names it subscribes to.
    pub(crate) topics: BTreeSet<String>,
    /// The regular expression it subscribes with, if any.
    pub(crate) regex: Option<Subscription>,
    /// The assignor it asked for, if any.
    pub(crate) assignor: Option<String>,
    /// Partitions it owns and keeps.
    pub(crate) assigned: BTreeSet<TopicPartition>,
    /// Partitions it was told to give up and has not yet confirmed giving
    /// up; nobody else gets them meanwhile.
    pub(crate) revoking: BTreeSet<TopicPartition>,
    /// By then it must have revoked them, or it is removed.
    pub(crate) revoke_deadline: Ms,
    /// What it last said it owns.
    pub(crate) reported: Option<BTreeSet<TopicPartition>>,
    /// The (epoch, partitions) last sent to it.
    pub(crate) sent: Option<(i32, BTreeSet<TopicPartition>)>,
    /// When it was last heard from.
    pub(crate) last_heard: Ms,
    /// A static member that left for a while (epoch -2): it keeps its
    /// partitions until its session runs out or its instance comes back.
    pub(crate) parked: bool,
}

impl Member {
    /// A member joining now, with nothing assigned.
    pub(crate) fn new(id: String, now: Ms) -> Self {
        Self {
            id,
            epoch: 0,
            previous_epoch: 0,
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: DEFAULT_REBALANCE_TIMEOUT_MS,
            topics: BTreeSet::new(),
            regex: None,
            assignor: None,
            assigned: BTreeSet::new(),
            revoking: BTreeSet::new(),
            revoke_deadline: 0,
            reported: None,
            sent: None,
            last_heard: now,
            parked: false,
        }
    }

    /// Forgets its partitions and epoch (it joined again with epoch 0:
    /// it has given up everything).
    pub(crate) fn reset(&mut self) {
        self.epoch = 0;
        self.previous_epoch = 0;
        self.assigned.clear();
        self.revoking.clear();
        self.reported = None;
        self.sent = None;
    }

    /// Whether it subscribes to `topic`, by name or by its expression.
    pub(crate) fn subscribes(&self, topic: &str) -> bool {
        self.topics.contains(topic) || self.regex.as_ref().is_some_and(|r| r.matches(topic))
    }

    /// Whether it holds `tp`, kept or still being revoked.
    pub(crate) fn holds(&self, tp: &TopicPartition) -> bool {
        self.assigned.contains(tp) || self.revoking.contains(tp)
    }

    /// Moves its assignment one step towards `target` at `target_epoch`:
    /// 1. while partitions are being revoked, nothing moves until it
    ///    reports owning none of them;
    /// 2. partitions it has and should not are revoked (its epoch stays);
    /// 3. otherwise it takes the target epoch and every target partition
    ///    that no other member holds (`taken`); the others follow on later
    ///    heartbeats, once their owners have let go.
    pub(crate) fn reconcile(
        &mut self,
        target: &BTreeSet<TopicPartition>,
        target_epoch: i32,
        taken: impl Fn(&TopicPartition) -> bool,
        now: Ms,
    ) {
        if !self.revoking.is_empty() {
            let released = self
                .reported
                .as_ref()
                .is_some_and(|owned| owned.is_disjoint(&self.revoking));
            if !released {
                return;
            }
            self.revoking.clear();
        }
        let lost: BTreeSet<TopicPartition> = self.assigned.difference(target).copied().collect();
        if !lost.is_empty() {
            self.assigned.retain(|tp| target.contains(tp));
            self.revoking = lost;
            self.revoke_deadline = now + Ms::from(self.rebalance_timeout_ms.max(0));
            return;
        }
        if self.epoch != target_epoch {
            self.previous_epoch = self.epoch;
            self.epoch = target_epoch;
        }
        for tp in target {
            if !self.assigned.contains(tp) && !taken(tp) {
                self.assigned.insert(*tp);
            }
        }
    }

    /// Whether its session or its revocation time ran out at `now`.
    pub(crate) fn expired(&self, now: Ms, session_ms: i32) -> bool {
        self.last_heard + Ms::from(session_ms) <= now
            || (!self.revoking.is_empty() && self.revoke_deadline <= now)
    }

    /// The assignment to send it, if it changed since the last one sent
    /// (or `always`, when it joined).
    pub(crate) fn take_news(&mut self, always: bool) -> Option<BTreeSet<TopicPartition>> {
        let now = (self.epoch, self.assigned.clone());
        if !always && self.sent.as_ref() == Some(&now) {
            return None;
        }
        self.sent = Some(now);
        Some(self.assigned.clone())
    }
}

/// The rebalance timeout of a member that gave none (the client default
/// of `max.poll.interval.ms`).
pub(crate) const DEFAULT_REBALANCE_TIMEOUT_MS: i32 = 300_000;

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn tp(p: i32) -> TopicPartition {
        (Uuid::from_u128(1), p)
    }

    #[test]
    fn revokes_before_taking_the_new_epoch() {
        let mut m = Member::new("a".into(), 0);
        m.reconcile(&[tp(0), tp(1)].into(), 1, |_| false, 0);
        assert_eq!((m.epoch, m.assigned.len()), (1, 2));
        m.reconcile(&[tp(0)].into(), 2, |_| false, 0);
        assert_eq!(m.epoch, 1, "the epoch waits for the revocation");
        assert_eq!(m.revoking, [tp(1)].into());
        m.reported = Some([tp(0), tp(1)].into());
        m.reconcile(&[tp(0)].into(), 2, |_| false, 0);
        assert_eq!(m.epoch, 1, "still owned");
        m.reported = Some([tp(0)].into());
        m.reconcile(&[tp(0)].into(), 2, |_| false, 0);
        assert_eq!((m.epoch, m.previous_epoch), (2, 1));
        assert!(m.revoking.is_empty());
    }

    #[test]
    fn takes_only_partitions_nobody_holds() {
        let mut m = Member::new("b".into(), 0);
        m.reconcile(&[tp(0), tp(1)].into(), 3, |p| *p == tp(1), 0);
        assert_eq!((m.epoch, m.assigned.clone()), (3, [tp(0)].into()));
        m.reconcile(&[tp(0), tp(1)].into(), 3, |_| false, 0);
        assert_eq!(m.assigned, [tp(0), tp(1)].into());
    }
}
