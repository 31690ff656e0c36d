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
//!
//! This file holds the group's state and the answers it gives; its calls are
//! split by what they do: `join` (JoinGroup), `rebalance` (completing the
//! join phase), `sync` (SyncGroup), `standing` (Heartbeat, the OffsetCommit
//! check), `removal` (LeaveGroup, expiry on the tick) and `describe`.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::member::Member;

mod describe;
mod join;
mod rebalance;
mod removal;
mod standing;
mod sync;

/// Milliseconds on the coordinator's monotonic clock.
pub(crate) type Ms = i64;

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
pub(super) enum Pending<T> {
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
    /// The session timeout of KIP-848 consumer group members (set by the
    /// broker, not the client).
    pub consumer_session_ms: i32,
    /// The heartbeat interval told to KIP-848 consumer group members.
    pub consumer_heartbeat_ms: i32,
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

/// How long a group that had members stays in memory once Empty (Kafka's
/// cleanup interval, `offsets.retention.check.interval.ms`).
pub(super) const EMPTY_KEPT_MS: Ms = 600_000;

/// One group's membership.
#[derive(Debug)]
pub(super) struct Group {
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
    /// When the group last became Empty.
    empty_since: Ms,
    next_seq: u64,
    limits: Limits,
}

impl Group {
    /// An empty group.
    pub(super) fn new(limits: Limits) -> Self {
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
            empty_since: 0,
            next_seq: 0,
            limits,
        }
    }

    /// The current state.
    pub(super) fn state(&self) -> State {
        self.state
    }

    /// The current generation.
    pub(super) fn generation(&self) -> i32 {
        self.generation
    }

    /// The protocol type members joined with.
    pub(super) fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }

    /// The generation's protocol.
    pub(super) fn protocol(&self) -> Option<&str> {
        self.protocol.as_deref()
    }

    /// Whether the group has members, or members on their way in (it
    /// cannot be deleted then).
    pub(super) fn is_busy(&self) -> bool {
        self.state != State::Empty || !self.members.is_empty() || !self.pending.is_empty()
    }

    /// Whether nothing is left worth keeping in memory at `now`. A group
    /// that had members stays, `Empty` with its protocol type, for
    /// [`EMPTY_KEPT_MS`] after the last one left (Kafka keeps it until its
    /// offsets expire or a cleanup finds none): a consumer that just closed
    /// still sees its group, and can delete it.
    pub(super) fn is_idle(&self, now: Ms) -> bool {
        !self.is_busy() && (self.protocol_type.is_none() || now >= self.empty_since + EMPTY_KEPT_MS)
    }
}
