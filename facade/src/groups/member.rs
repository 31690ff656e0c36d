//! A member of a consumer group as the coordinator knows it: who it is, the
//! protocols it offered, its assignment, when it was last heard from, and
//! the JoinGroup or SyncGroup call it is waiting in.

use bytes::Bytes;
use tokio::sync::oneshot;

use super::group::{JoinAnswer, Ms, SyncAnswer};

/// What a JoinGroup carries.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    /// The member id, empty on a first join.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// The client id of the request header.
    pub client_id: String,
    /// The address the request came from.
    pub client_host: String,
    /// Removed when silent for this long.
    pub session_timeout_ms: i32,
    /// How long a rebalance waits for this member to rejoin.
    pub rebalance_timeout_ms: i32,
    /// `consumer` for consumers.
    pub protocol_type: String,
    /// (name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// Whether a first join gets `MEMBER_ID_REQUIRED` (JoinGroup v4+).
    pub require_known_member_id: bool,
}

/// A member of a group.
#[derive(Debug)]
pub(super) struct Member {
    /// Its member id.
    pub id: String,
    /// Its static instance id.
    pub instance_id: Option<String>,
    /// The client id it joined with.
    pub client_id: String,
    /// The address it joined from.
    pub client_host: String,
    /// Its session timeout.
    pub session_timeout_ms: i32,
    /// Its rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// (name, metadata) in its order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// What the leader assigned it this generation.
    pub assignment: Bytes,
    /// When it last called the coordinator.
    pub last_heard: Ms,
    /// Order of arrival in the group (the leader is the earliest present).
    pub seq: u64,
    /// Its JoinGroup, waiting for the rebalance to complete.
    pub awaiting_join: Option<oneshot::Sender<JoinAnswer>>,
    /// Its SyncGroup, waiting for the leader's assignment.
    pub awaiting_sync: Option<oneshot::Sender<SyncAnswer>>,
}

impl Member {
    /// A member joining with `request` under `id`.
    pub(super) fn new(id: String, request: &JoinRequest, seq: u64, now: Ms) -> Self {
        Self {
            id,
            instance_id: request.instance_id.clone(),
            client_id: request.client_id.clone(),
            client_host: request.client_host.clone(),
            session_timeout_ms: request.session_timeout_ms,
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            protocols: request.protocols.clone(),
            assignment: Bytes::new(),
            last_heard: now,
            seq,
            awaiting_join: None,
            awaiting_sync: None,
        }
    }

    /// Takes what a rejoin may change.
    pub(super) fn update(&mut self, request: &JoinRequest) {
        self.client_id.clone_from(&request.client_id);
        self.client_host.clone_from(&request.client_host);
        self.session_timeout_ms = request.session_timeout_ms;
        self.rebalance_timeout_ms = request.rebalance_timeout_ms;
        self.protocols.clone_from(&request.protocols);
    }

    /// Its metadata for `protocol`, if it offered that protocol.
    pub(super) fn metadata(&self, protocol: &str) -> Option<Bytes> {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, metadata)| metadata.clone())
    }

    /// Whether its session is alive at `now`: a member waiting in a join or
    /// a sync is alive (the coordinator owes it an answer).
    pub(super) fn keep_alive(&self, now: Ms) -> bool {
        self.awaiting_join.is_some()
            || self.awaiting_sync.is_some()
            || self.last_heard + Ms::from(self.session_timeout_ms) > now
    }
}
