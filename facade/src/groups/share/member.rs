//! A share group member and its heartbeat (ShareGroupHeartbeat): joining
//! at epoch 0, leaving at -1, otherwise renewing at the epoch it was given.
//! Share groups need no revocation (a partition may be fetched by several
//! members at once; the leases arbitrate), so a member moves to the group
//! epoch on its next heartbeat.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::ResponseError;
use storage::PartitionId;

use super::session::{Held, Session};
use super::{MemberView, Ms, ShareGroup};

/// A heartbeat, checked.
#[derive(Debug, Clone)]
pub(crate) struct Heartbeat {
    /// The member id the client chose.
    pub(crate) member_id: String,
    /// Its epoch: 0 joins, -1 leaves.
    pub(crate) epoch: i32,
    /// Its rack.
    pub(crate) rack_id: Option<String>,
    /// The topics it subscribes to, when they changed (always on joining).
    pub(crate) topics: Option<BTreeSet<String>>,
    /// Client id.
    pub(crate) client_id: String,
    /// Address.
    pub(crate) client_host: String,
}

/// What a heartbeat answers.
#[derive(Debug, Default)]
pub(crate) struct HeartbeatAnswer {
    /// The refusal, if any.
    pub(crate) error: Option<ResponseError>,
    /// Why.
    pub(crate) message: Option<String>,
    /// The member id.
    pub(crate) member_id: String,
    /// The member's epoch (-1 after leaving).
    pub(crate) epoch: i32,
    /// The topics it subscribes to (its assignment is their partitions).
    pub(crate) topics: BTreeSet<String>,
    /// Records held by members that left or expired: to be released.
    pub(crate) released: Vec<(PartitionId, Held)>,
}

impl HeartbeatAnswer {
    /// A refusal.
    pub(crate) fn error(error: ResponseError, message: String) -> Self {
        Self {
            error: Some(error),
            message: Some(message),
            ..Self::default()
        }
    }
}

/// A member of a share group.
#[derive(Debug)]
pub(crate) struct Member {
    id: String,
    epoch: i32,
    pub(super) last_seen: Ms,
    topics: BTreeSet<String>,
    rack_id: Option<String>,
    client_id: String,
    client_host: String,
    /// Its share session, once a ShareFetch opened one.
    pub(crate) session: Option<Session>,
    /// What it acquired and has not acknowledged, by partition and offset.
    pub(crate) held: BTreeMap<PartitionId, BTreeMap<i64, Held>>,
}

impl Member {
    pub(super) fn view(&self) -> MemberView {
        MemberView {
            member_id: self.id.clone(),
            rack_id: self.rack_id.clone(),
            epoch: self.epoch,
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            topics: self.topics.clone(),
        }
    }

    /// Everything it held, for release.
    pub(super) fn into_held(self) -> Vec<(PartitionId, Held)> {
        self.held
            .into_iter()
            .flat_map(|(p, records)| records.into_values().map(move |h| (p, h)))
            .collect()
    }

    /// Takes everything it holds, for release (its session closed).
    pub(super) fn take_held(&mut self) -> Vec<(PartitionId, Held)> {
        std::mem::take(&mut self.held)
            .into_iter()
            .flat_map(|(p, records)| records.into_values().map(move |h| (p, h)))
            .collect()
    }
}

/// Applies a heartbeat to a group whose expired members are gone.
pub(super) fn heartbeat(
    group: &mut ShareGroup,
    request: Heartbeat,
    now: Ms,
    released: &mut Vec<(PartitionId, Held)>,
) -> HeartbeatAnswer {
    let id = request.member_id.clone();
    match request.epoch {
        -1 => {
            let Some(member) = group.members.remove(&id) else {
                return HeartbeatAnswer::error(
                    ResponseError::UnknownMemberId,
                    format!("member {id} is not in the group"),
                );
            };
            released.extend(member.into_held());
            group.epoch += 1;
            HeartbeatAnswer {
                member_id: id,
                epoch: -1,
                ..HeartbeatAnswer::default()
            }
        }
        0 => {
            let topics = request.topics.unwrap_or_default();
            match group.members.get_mut(&id) {
                // A rejoin of a known member (its answer was lost).
                Some(m) => {
                    if m.topics != topics {
                        m.topics = topics;
                        group.epoch += 1;
                    }
                }
                None => {
                    group.epoch += 1;
                    group.members.insert(
                        id.clone(),
                        Member {
                            id: id.clone(),
                            epoch: 0,
                            last_seen: now,
                            topics,
                            rack_id: request.rack_id.clone(),
                            client_id: request.client_id.clone(),
                            client_host: request.client_host.clone(),
                            session: None,
                            held: BTreeMap::new(),
                        },
                    );
                }
            }
            renew(group, &id, now)
        }
        epoch => {
            let group_epoch = group.epoch;
            let Some(m) = group.members.get_mut(&id) else {
                return HeartbeatAnswer::error(
                    ResponseError::UnknownMemberId,
                    format!("member {id} is not in the group"),
                );
            };
            if epoch != m.epoch {
                return HeartbeatAnswer::error(
                    ResponseError::FencedMemberEpoch,
                    format!("epoch {epoch} is not the member's epoch {}", m.epoch),
                );
            }
            let mut bump = false;
            if let Some(topics) = request.topics {
                if topics != m.topics {
                    m.topics = topics;
                    bump = true;
                }
            }
            if bump {
                group.epoch = group_epoch + 1;
            }
            renew(group, &id, now)
        }
    }
}

/// Moves a member to the group epoch and answers it.
fn renew(group: &mut ShareGroup, id: &str, now: Ms) -> HeartbeatAnswer {
    let epoch = group.epoch;
    let Some(m) = group.members.get_mut(id) else {
        return HeartbeatAnswer::error(ResponseError::UnknownMemberId, format!("member {id}"));
    };
    m.last_seen = now;
    m.epoch = epoch;
    HeartbeatAnswer {
        member_id: id.to_owned(),
        epoch,
        topics: m.topics.clone(),
        ..HeartbeatAnswer::default()
    }
}
