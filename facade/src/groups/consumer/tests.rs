//! The consumer group rules, driven by hand with explicit times.

use std::collections::BTreeSet;

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::group::ConsumerGroup;
use super::{Heartbeat, Topic, TopicPartition, Topics};

const SESSION: i32 = 45_000;

fn topics() -> Topics {
    let mut t = Topics::new();
    t.insert(
        "t".into(),
        Topic {
            id: Uuid::from_u128(5),
            partitions: (0..6).collect(),
        },
    );
    t
}

fn join(id: &str) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        epoch: 0,
        rebalance_timeout_ms: 60_000,
        topics: Some(["t".to_owned()].into()),
        ..Heartbeat::default()
    }
}

fn beat(id: &str, epoch: i32, owned: &BTreeSet<TopicPartition>) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned.clone()),
        ..Heartbeat::default()
    }
}

#[test]
fn a_partition_moves_only_after_its_owner_revoked_it() {
    let mut g = ConsumerGroup::default();
    let a = g.heartbeat(join("a"), topics(), 0);
    assert_eq!(a.error, None);
    let owned_a = a.assignment.expect("assignment");
    assert_eq!((a.epoch, owned_a.len()), (1, 6));

    let b = g.heartbeat(join("b"), topics(), 1);
    assert_eq!(b.epoch, 2, "b takes the new epoch");
    assert!(
        b.assignment.expect("sent").is_empty(),
        "a still holds everything"
    );

    // a is told to give up three partitions, at its old epoch.
    let a = g.heartbeat(beat("a", 1, &owned_a), topics(), 2);
    assert_eq!(a.epoch, 1);
    let kept = a.assignment.expect("revocation");
    assert_eq!(kept.len(), 3);
    let b = g.heartbeat(beat("b", 2, &BTreeSet::new()), topics(), 3);
    assert!(b.assignment.is_none(), "nothing free for b yet");

    // a confirms; it takes the epoch, then b gets the three.
    let a = g.heartbeat(beat("a", 1, &kept), topics(), 4);
    assert_eq!(a.epoch, 2);
    let b = g.heartbeat(beat("b", 2, &BTreeSet::new()), topics(), 5);
    let got = b.assignment.expect("b's share");
    assert_eq!(got.len(), 3);
    assert!(got.is_disjoint(&kept));
    assert_eq!(g.state().name(), "Stable");
}

#[test]
fn stale_epochs_and_unknown_members_are_refused_without_change() {
    let mut g = ConsumerGroup::default();
    let a = g.heartbeat(join("a"), topics(), 0);
    let owned = a.assignment.expect("assignment");
    g.heartbeat(join("b"), topics(), 1);
    let epoch = g.epoch;
    let fenced = g.heartbeat(beat("a", 7, &owned), topics(), 2);
    assert_eq!(fenced.error, Some(ResponseError::FencedMemberEpoch));
    let unknown = g.heartbeat(beat("zz", 1, &owned), topics(), 2);
    assert_eq!(unknown.error, Some(ResponseError::UnknownMemberId));
    assert_eq!(g.epoch, epoch);
    assert_eq!(g.members["a"].assigned, owned, "a keeps what it had");
    assert_eq!(g.commit_check(1, "a"), None);
    assert_eq!(
        g.commit_check(0, "a"),
        Some(ResponseError::StaleMemberEpoch)
    );
    assert_eq!(
        g.commit_check(1, "zz"),
        Some(ResponseError::UnknownMemberId)
    );
}

#[test]
fn a_silent_member_expires_and_its_partitions_are_free() {
    let mut g = ConsumerGroup::default();
    let a = g.heartbeat(join("a"), topics(), 0);
    assert_eq!(a.assignment.expect("all").len(), 6);
    let b = g.heartbeat(join("b"), topics(), 10);
    g.tick(SESSION, SESSION as i64 - 1);
    assert_eq!(g.members.len(), 2);
    // b kept heartbeating, a did not.
    let b = g.heartbeat(beat("b", b.epoch, &BTreeSet::new()), topics(), 40_000);
    assert!(b.assignment.is_none());
    g.tick(SESSION, SESSION as i64);
    assert_eq!(g.members.len(), 1);
    let b = g.heartbeat(beat("b", b.epoch, &BTreeSet::new()), topics(), 45_100);
    assert_eq!(b.assignment.expect("everything").len(), 6);
}

#[test]
fn leaving_frees_the_partitions() {
    let mut g = ConsumerGroup::default();
    let a = g.heartbeat(join("a"), topics(), 0);
    g.heartbeat(join("b"), topics(), 1);
    let left = g.heartbeat(beat("a", -1, &BTreeSet::new()), topics(), 2);
    assert_eq!((left.error, left.epoch), (None, -1));
    let again = g.heartbeat(beat("a", a.epoch, &BTreeSet::new()), topics(), 3);
    assert_eq!(again.error, Some(ResponseError::UnknownMemberId));
    let b = g.heartbeat(
        beat("b", g.assignment_epoch - 1, &BTreeSet::new()),
        topics(),
        4,
    );
    assert_eq!(b.error, None);
    assert_eq!(b.assignment.expect("all").len(), 6);
}

#[test]
fn a_static_member_comes_back_to_its_partitions_without_a_rebalance() {
    let mut g = ConsumerGroup::default();
    let with_instance = |id: &str| Heartbeat {
        instance_id: Some("i1".into()),
        ..join(id)
    };
    let first = g.heartbeat(with_instance("s1"), topics(), 0);
    let owned = first.assignment.expect("assignment");
    let busy = g.heartbeat(with_instance("s2"), topics(), 1);
    assert_eq!(busy.error, Some(ResponseError::UnreleasedInstanceId));
    let parked = g.heartbeat(beat("s1", -2, &BTreeSet::new()), topics(), 2);
    assert_eq!((parked.error, parked.epoch), (None, -2));
    let epoch = g.epoch;
    let back = g.heartbeat(with_instance("s2"), topics(), 3);
    assert_eq!(back.error, None);
    assert_eq!(back.epoch, first.epoch);
    assert_eq!(back.assignment, Some(owned));
    assert_eq!(g.epoch, epoch, "no rebalance");
    assert!(!g.members.contains_key("s1"));
}
