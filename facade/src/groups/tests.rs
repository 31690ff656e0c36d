//! The group state machine, driven by hand with explicit times.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::group::{Group, JoinAnswer, Limits, Ms, Pending, State, SyncAnswer, EMPTY_KEPT_MS};
use super::member::JoinRequest;

const LIMITS: Limits = Limits {
    min_session_ms: 6_000,
    max_session_ms: 300_000,
    initial_delay_ms: 3_000,
    consumer_session_ms: 45_000,
    consumer_heartbeat_ms: 5_000,
};

fn request(member_id: &str, instance: Option<&str>, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        member_id: member_id.to_owned(),
        instance_id: instance.map(str::to_owned),
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".to_owned(),
        protocols: protocols
            .iter()
            .map(|p| ((*p).to_owned(), Bytes::from(format!("meta-{p}"))))
            .collect(),
        require_known_member_id: true,
    }
}

fn now<T: std::fmt::Debug>(p: Pending<T>) -> T {
    match p {
        Pending::Now(answer) => answer,
        Pending::Later(_) => panic!("expected an answer at once"),
    }
}

fn later<T>(p: Pending<T>) -> oneshot::Receiver<T> {
    match p {
        Pending::Later(rx) => rx,
        Pending::Now(_) => panic!("expected to wait"),
    }
}

fn answered<T>(rx: &mut oneshot::Receiver<T>) -> Option<T> {
    rx.try_recv().ok()
}

/// A member through the member-id handshake, waiting in its second join.
fn enter(g: &mut Group, t: Ms) -> (String, oneshot::Receiver<JoinAnswer>) {
    let first = now(g.join(request("", None, &["range"]), t));
    assert_eq!(first.error, Some(ResponseError::MemberIdRequired));
    let id = first.member_id;
    let rx = later(g.join(request(&id, None, &["range"]), t));
    (id, rx)
}

/// Three members joined and synced: (ids, leader) at generation 1.
fn stable_three(g: &mut Group) -> (Vec<String>, String) {
    let mut waiting: Vec<_> = (0..3).map(|i| enter(g, i * 100)).collect();
    g.tick(3_199);
    assert!(waiting.iter_mut().all(|(_, rx)| answered(rx).is_none()));
    g.tick(3_200);
    let answers: Vec<JoinAnswer> = waiting
        .iter_mut()
        .map(|(_, rx)| answered(rx).expect("joined"))
        .collect();
    let leader = answers[0].leader.clone();
    let ids: Vec<String> = waiting.into_iter().map(|(id, _)| id).collect();
    let mut syncs = Vec::new();
    for id in ids.iter().filter(|id| **id != leader) {
        syncs.push(later(g.sync(1, id, None, (None, None), Vec::new(), 3_300)));
    }
    let assignments = ids
        .iter()
        .map(|id| (id.clone(), Bytes::from(format!("for-{id}"))))
        .collect();
    let own = now(g.sync(1, &leader, None, (None, None), assignments, 3_400));
    assert_eq!(own.assignment, Bytes::from(format!("for-{leader}")));
    for mut rx in syncs {
        assert!(answered(&mut rx)
            .expect("synced")
            .assignment
            .starts_with(b"for-"));
    }
    assert_eq!(g.state(), State::Stable);
    (ids, leader)
}

#[test]
fn a_first_join_gets_a_member_id_to_come_back_with() {
    let mut g = Group::new(LIMITS);
    let (id, mut rx) = enter(&mut g, 0);
    assert!(id.starts_with("client-"));
    g.tick(2_999);
    assert!(
        answered(&mut rx).is_none(),
        "the initial delay waits for more"
    );
    g.tick(3_000);
    let a = answered(&mut rx).expect("joined");
    assert_eq!((a.error, a.generation), (None, 1));
    assert_eq!(a.leader, id);
    assert_eq!(a.members.len(), 1);
    assert_eq!(a.protocol.as_deref(), Some("range"));
    assert_eq!(g.state(), State::CompletingRebalance);
}

#[test]
fn three_members_share_one_generation_and_each_gets_its_assignment() {
    let mut g = Group::new(LIMITS);
    let (ids, leader) = stable_three(&mut g);
    assert_eq!(g.generation(), 1);
    assert!(ids.contains(&leader));
    let described = g.describe();
    assert_eq!(described.len(), 3);
    assert!(described
        .iter()
        .all(|m| m.assignment == format!("for-{}", m.member_id)));
}

#[test]
fn heartbeats_tell_members_where_the_group_is() {
    let mut g = Group::new(LIMITS);
    let (ids, _) = stable_three(&mut g);
    assert_eq!(g.heartbeat(1, &ids[0], None, 4_000), None);
    assert_eq!(
        g.heartbeat(0, &ids[0], None, 4_000),
        Some(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        g.heartbeat(1, "nobody", None, 4_000),
        Some(ResponseError::UnknownMemberId)
    );
    // A leave starts a rebalance: the others hear of it.
    assert_eq!(g.leave(&[(ids[2].clone(), None)], 4_100), vec![None]);
    assert_eq!(
        g.heartbeat(1, &ids[0], None, 4_200),
        Some(ResponseError::RebalanceInProgress)
    );
    let mut a = later(g.join(request(&ids[0], None, &["range"]), 4_300));
    let mut b = later(g.join(request(&ids[1], None, &["range"]), 4_400));
    let (a, b) = (answered(&mut a).expect("a"), answered(&mut b).expect("b"));
    assert_eq!((a.generation, b.generation), (2, 2));
    assert_eq!(
        a.members.len() + b.members.len(),
        2,
        "only the leader sees members"
    );
}

#[test]
fn a_silent_member_is_removed_and_the_rest_rebalance() {
    let mut g = Group::new(LIMITS);
    let (ids, _) = stable_three(&mut g);
    for t in [5_000, 10_000] {
        g.heartbeat(1, &ids[0], None, t);
        g.heartbeat(1, &ids[1], None, t);
    }
    // ids[2] was last heard when it synced, at 3,300.
    g.tick(13_299);
    assert_eq!(g.state(), State::Stable);
    g.tick(13_301);
    assert_eq!(g.state(), State::PreparingRebalance);
    assert_eq!(
        g.heartbeat(1, &ids[2], None, 13_500),
        Some(ResponseError::UnknownMemberId)
    );
    // One rejoins; the other keeps heartbeating but does not rejoin within
    // the rebalance timeout (30 s from 13,301).
    let mut a = later(g.join(request(&ids[0], None, &["range"]), 14_000));
    for t in [20_000, 29_000, 38_000] {
        assert_eq!(
            g.heartbeat(1, &ids[1], None, t),
            Some(ResponseError::RebalanceInProgress)
        );
        g.tick(t);
    }
    g.tick(43_300);
    assert!(answered(&mut a).is_none());
    g.tick(43_302);
    let a = answered(&mut a).expect("completed by the rebalance timeout");
    assert_eq!((a.generation, a.members.len()), (2, 1));
    assert_eq!(g.describe().len(), 1);
}

#[test]
fn the_last_member_leaving_empties_the_group() {
    let mut g = Group::new(LIMITS);
    let (id, mut rx) = enter(&mut g, 0);
    g.tick(3_000);
    answered(&mut rx).expect("joined");
    assert_eq!(g.leave(&[(id.clone(), None)], 3_100), vec![None]);
    assert_eq!(g.state(), State::Empty);
    assert_eq!(
        g.protocol_type(),
        Some("consumer"),
        "still a consumer group"
    );
    assert!(!g.is_busy());
    assert!(!g.is_idle(3_100), "kept a while, Empty");
    assert!(g.is_idle(3_100 + EMPTY_KEPT_MS));
    assert_eq!(
        g.leave(&[(id, None)], 3_200),
        vec![Some(ResponseError::UnknownMemberId)]
    );
}

#[test]
fn a_static_member_comes_back_without_a_rebalance_and_fences_its_old_self() {
    let mut g = Group::new(LIMITS);
    let mut a = later(g.join(request("", Some("a"), &["range"]), 0));
    let mut b = later(g.join(request("", Some("b"), &["range"]), 0));
    g.tick(3_000);
    let (ja, jb) = (answered(&mut a).expect("a"), answered(&mut b).expect("b"));
    let (leader, follower) = if ja.leader == ja.member_id {
        (ja, jb)
    } else {
        (jb, ja)
    };
    let follower_instance = follower.member_id.split('-').next().map(str::to_owned);
    let mut wait = later(g.sync(1, &follower.member_id, None, (None, None), vec![], 3_100));
    let assignment = vec![
        (leader.member_id.clone(), Bytes::from_static(b"L")),
        (follower.member_id.clone(), Bytes::from_static(b"F")),
    ];
    now(g.sync(1, &leader.member_id, None, (None, None), assignment, 3_200));
    assert_eq!(answered(&mut wait).expect("synced").assignment, "F");

    // The follower restarts: a join without member id, same instance id.
    let instance = follower_instance.as_deref();
    let back = now(g.join(request("", instance, &["range"]), 5_000));
    assert_eq!((back.error, back.generation), (None, 1), "no rebalance");
    assert_ne!(back.member_id, follower.member_id);
    assert_eq!(g.state(), State::Stable);
    let synced = now(g.sync(1, &back.member_id, instance, (None, None), vec![], 5_100));
    assert_eq!(synced.assignment, "F", "it keeps its partitions");
    assert_eq!(
        g.heartbeat(1, &follower.member_id, instance, 5_200),
        Some(ResponseError::FencedInstanceId)
    );
    assert_eq!(g.heartbeat(1, &leader.member_id, None, 5_200), None);
}

#[test]
fn the_protocol_is_the_one_all_support_that_most_prefer() {
    let mut g = Group::new(LIMITS);
    let mut joins = vec![
        later(g.join(request("", Some("x"), &["range", "roundrobin"]), 0)),
        later(g.join(request("", Some("y"), &["roundrobin", "range"]), 0)),
        later(g.join(request("", Some("z"), &["roundrobin", "sticky"]), 0)),
    ];
    g.tick(3_000);
    for rx in &mut joins {
        let a = answered(rx).expect("joined");
        assert_eq!(a.protocol.as_deref(), Some("roundrobin"));
    }
    let odd = now(g.join(request("", None, &["sticky"]), 3_100));
    assert_eq!(odd.error, Some(ResponseError::InconsistentGroupProtocol));
    let mut other_type = request("", None, &["roundrobin"]);
    other_type.protocol_type = "connect".to_owned();
    assert_eq!(
        now(g.join(other_type, 3_100)).error,
        Some(ResponseError::InconsistentGroupProtocol)
    );
}

#[test]
fn commits_are_checked_against_membership() {
    let mut g = Group::new(LIMITS);
    assert_eq!(
        g.commit_check(-1, "", None, 0),
        None,
        "a group without members"
    );
    let (ids, _) = stable_three(&mut g);
    assert_eq!(g.commit_check(1, &ids[0], None, 4_000), None);
    assert_eq!(
        g.commit_check(-1, "", None, 4_000),
        Some(ResponseError::UnknownMemberId),
        "no admin reset while members are active"
    );
    assert_eq!(
        g.commit_check(0, &ids[0], None, 4_000),
        Some(ResponseError::IllegalGeneration)
    );
}

#[test]
fn a_commit_during_the_sync_round_is_refused() {
    let mut g = Group::new(LIMITS);
    let (id, mut rx) = enter(&mut g, 0);
    g.tick(3_000);
    answered(&mut rx).expect("joined");
    assert_eq!(
        g.commit_check(1, &id, None, 3_100),
        Some(ResponseError::RebalanceInProgress)
    );
}

#[test]
fn session_timeouts_outside_the_limits_are_refused() {
    let mut g = Group::new(LIMITS);
    let mut r = request("", None, &["range"]);
    r.session_timeout_ms = 1_000;
    assert_eq!(
        now(g.join(r, 0)).error,
        Some(ResponseError::InvalidSessionTimeout)
    );
    assert!(g.is_idle(0));
}

#[test]
fn an_unknown_member_id_is_refused_and_an_unused_one_expires() {
    let mut g = Group::new(LIMITS);
    let unknown = now(g.join(request("made-up", None, &["range"]), 0));
    assert_eq!(unknown.error, Some(ResponseError::UnknownMemberId));
    let first = now(g.join(request("", None, &["range"]), 0));
    assert!(!g.is_idle(0), "the handed-out id is remembered");
    g.tick(10_001);
    assert!(g.is_idle(10_001), "and forgotten after a session timeout");
    let late = now(g.join(request(&first.member_id, None, &["range"]), 10_002));
    assert_eq!(late.error, Some(ResponseError::UnknownMemberId));
}

#[test]
fn a_rebalance_voids_the_assignments_being_synced() {
    let mut g = Group::new(LIMITS);
    let (a, mut ra) = enter(&mut g, 0);
    let (b, mut rb) = enter(&mut g, 0);
    g.tick(3_000);
    let (ja, _) = (answered(&mut ra).expect("a"), answered(&mut rb).expect("b"));
    let follower = if ja.leader == a { &b } else { &a };
    let mut wait = later(g.sync(1, follower, None, (None, None), vec![], 3_100));
    // A third member arrives before the leader syncs.
    let (_, _rc) = enter(&mut g, 3_200);
    let a: SyncAnswer = answered(&mut wait).expect("told");
    assert_eq!(a.error, Some(ResponseError::RebalanceInProgress));
    assert_eq!(g.state(), State::PreparingRebalance);
}

#[test]
fn a_leader_that_never_syncs_is_removed_after_the_rebalance_timeout() {
    let mut g = Group::new(LIMITS);
    let (a, mut ra) = enter(&mut g, 0);
    let (b, mut rb) = enter(&mut g, 0);
    g.tick(3_000);
    let ja = answered(&mut ra).expect("a");
    answered(&mut rb).expect("b");
    let (leader, follower) = if ja.leader == a { (a, b) } else { (b, a) };
    let mut wait = later(g.sync(1, &follower, None, (None, None), vec![], 3_100));
    // The leader keeps heartbeating but never hands in the assignment.
    for t in (4_000..33_000).step_by(2_000) {
        assert_eq!(g.heartbeat(1, &leader, None, t), None);
        g.tick(t);
    }
    g.tick(33_001);
    assert_eq!(
        answered(&mut wait).expect("told").error,
        Some(ResponseError::RebalanceInProgress)
    );
    assert_eq!(
        g.heartbeat(1, &leader, None, 33_100),
        Some(ResponseError::UnknownMemberId)
    );
    let mut again = later(g.join(request(&follower, None, &["range"]), 33_200));
    let rejoined = answered(&mut again).expect("alone, at once");
    assert_eq!((rejoined.generation, rejoined.leader), (2, follower));
}

#[test]
fn a_batched_leave_removes_static_members_by_instance_id() {
    let mut g = Group::new(LIMITS);
    let mut a = later(g.join(request("", Some("a"), &["range"]), 0));
    let mut b = later(g.join(request("", Some("b"), &["range"]), 0));
    g.tick(3_000);
    let (ja, jb) = (answered(&mut a).expect("a"), answered(&mut b).expect("b"));
    let answers = g.leave(
        &[
            (String::new(), Some("a".to_owned())),
            ("someone-else".to_owned(), Some("b".to_owned())),
            (String::new(), Some("unknown".to_owned())),
        ],
        3_100,
    );
    assert_eq!(
        answers,
        vec![
            None,
            Some(ResponseError::FencedInstanceId),
            Some(ResponseError::UnknownMemberId),
        ]
    );
    assert_eq!(
        g.heartbeat(1, &ja.member_id, Some("a"), 3_200),
        Some(ResponseError::UnknownMemberId)
    );
    assert_eq!(
        g.heartbeat(1, &jb.member_id, Some("b"), 3_200),
        Some(ResponseError::RebalanceInProgress),
        "b stays, and rebalances without a"
    );
}

/// A coordinator asked about a group sees the sessions that ran out since
/// the timer's last tick (here the timer never runs): a static member that
/// closed without leaving is gone exactly one session later.
#[tokio::test]
async fn a_group_is_asked_about_as_of_now_not_as_of_the_last_tick() {
    let limits = Limits {
        min_session_ms: 1,
        initial_delay_ms: 0,
        ..LIMITS
    };
    let coordinator = super::Coordinator::new(limits);
    let join = JoinRequest {
        session_timeout_ms: 300,
        ..request("", Some("static"), &["range"])
    };
    let joined = coordinator.join("g", join).await;
    assert_eq!((joined.error, joined.generation), (None, 1));
    let assignment = vec![(joined.member_id.clone(), Bytes::from_static(b"A"))];
    let synced = coordinator
        .sync(
            "g",
            1,
            &joined.member_id,
            Some("static"),
            (None, None),
            assignment,
        )
        .await;
    assert_eq!(synced.error, None);
    assert!(coordinator.has_members("g"), "within its session");
    tokio::time::sleep(std::time::Duration::from_millis(350)).await;
    assert_eq!(
        coordinator
            .describe("g")
            .map(|g| (g.state, g.members.len())),
        Some((State::Empty, 0)),
        "its session ran out"
    );
    assert!(!coordinator.has_members("g"));
    assert!(coordinator.forget("g"), "an Empty group is deleted");
}
