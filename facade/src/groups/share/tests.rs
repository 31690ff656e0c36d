use std::collections::BTreeSet;

use kafka_protocol::ResponseError;
use storage::PartitionId;

use super::*;

fn beat(member: &str, epoch: i32, topics: Option<&[&str]>) -> Heartbeat {
    Heartbeat {
        member_id: member.to_owned(),
        epoch,
        rack_id: None,
        topics: topics.map(|t| t.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>()),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
    }
}

fn held(offset: i64, lease: &str) -> Held {
    Held {
        offset,
        lease_id: lease.into(),
        transaction_id: format!("t{offset}"),
        delivery: 1,
        expires_at: Ms::MAX,
    }
}

#[test]
fn members_join_renew_at_their_epoch_and_are_fenced_otherwise() {
    let groups = ShareGroups::default();
    let a = groups.heartbeat("g", beat("a", 0, Some(&["t"])), 45_000);
    assert_eq!((a.error, a.epoch), (None, 1));
    let b = groups.heartbeat("g", beat("b", 0, Some(&["t"])), 45_000);
    assert_eq!(b.epoch, 2);
    let stale = groups.heartbeat("g", beat("a", 7, None), 45_000);
    assert_eq!(stale.error, Some(ResponseError::FencedMemberEpoch));
    let a = groups.heartbeat("g", beat("a", 1, None), 45_000);
    assert_eq!((a.error, a.epoch), (None, 2), "moved to the group epoch");
    let unknown = groups.heartbeat("nope", beat("a", 1, None), 45_000);
    assert_eq!(unknown.error, Some(ResponseError::UnknownMemberId));
    let view = groups.describe("g").expect("a share group");
    assert_eq!((view.state, view.members.len()), (ShareState::Stable, 2));
}

#[test]
fn a_leaving_member_hands_back_what_it_held() {
    let groups = ShareGroups::default();
    groups.heartbeat("g", beat("a", 0, Some(&["t"])), 45_000);
    groups
        .with_member("g", "a", |m, _| {
            m.hold(PartitionId::new(3), vec![held(0, "l"), held(1, "l")]);
            Ok(())
        })
        .expect("member");
    let left = groups.heartbeat("g", beat("a", -1, None), 45_000);
    assert_eq!((left.error, left.epoch, left.released.len()), (None, -1, 2));
    assert_eq!(
        groups.describe("g").map(|v| v.state),
        Some(ShareState::Empty)
    );
}

#[test]
fn sessions_take_each_epoch_once_in_order() {
    let groups = ShareGroups::default();
    groups.heartbeat("g", beat("a", 0, Some(&["t"])), 45_000);
    let run = |f: &dyn Fn(&mut Member) -> Result<(), ResponseError>| {
        groups.with_member("g", "a", |m, _| f(m))
    };
    assert_eq!(
        run(&|m| m.advance_session(1).map(|_| ())),
        Err(ResponseError::ShareSessionNotFound)
    );
    run(&|m| {
        m.open_session();
        Ok(())
    })
    .expect("opened");
    assert_eq!(run(&|m| m.advance_session(1).map(|_| ())), Ok(()));
    assert_eq!(
        run(&|m| m.advance_session(1).map(|_| ())),
        Err(ResponseError::InvalidShareSessionEpoch)
    );
    assert_eq!(run(&|m| m.advance_session(2).map(|_| ())), Ok(()));
    assert_eq!(run(&|m| m.has_session()), Ok(()));
    groups
        .with_member("g", "a", |m, _| Ok(m.close_session()))
        .expect("closed");
    assert_eq!(
        run(&|m| m.has_session()),
        Err(ResponseError::ShareSessionNotFound)
    );
}

#[test]
fn only_held_records_are_acknowledgeable() {
    let groups = ShareGroups::default();
    groups.heartbeat("g", beat("a", 0, Some(&["t"])), 45_000);
    let p = PartitionId::new(3);
    groups
        .with_member("g", "a", |m, now| {
            m.hold(p, vec![held(0, "l"), held(1, "l")]);
            assert_eq!(
                m.acknowledgeable(p, &[(0, 1), (2, 1)], now),
                Err(ResponseError::InvalidRecordState)
            );
            assert_eq!(m.acknowledgeable(p, &[(0, 1), (1, 2)], now)?.len(), 2);
            m.settle(p, &[0], &[]);
            assert_eq!(
                m.acknowledgeable(p, &[(0, 1)], now),
                Err(ResponseError::InvalidRecordState)
            );
            m.settle(p, &[], &["l".to_owned()]);
            assert!(m.held.is_empty());
            Ok(())
        })
        .expect("member");
}
