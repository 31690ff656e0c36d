//! The group as DescribeGroups and OffsetDelete see it: members in join
//! order, with their metadata and assignments.

use bytes::Bytes;

use super::{Group, MemberSummary, State};
use crate::groups::member::Member;

impl Group {
    /// The members, in join order, with metadata and assignments only when
    /// the group is stable (as Kafka describes them).
    pub(crate) fn describe(&self) -> Vec<MemberSummary> {
        let stable = self.state == State::Stable;
        self.in_join_order()
            .into_iter()
            .map(|m| MemberSummary {
                member_id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    self.protocol
                        .as_deref()
                        .and_then(|p| m.metadata(p))
                        .unwrap_or_default()
                } else {
                    Bytes::new()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Bytes::new()
                },
            })
            .collect()
    }

    /// Every member's subscription metadata for the generation's protocol.
    pub(crate) fn member_metadata(&self) -> Vec<Bytes> {
        let Some(protocol) = self.protocol.as_deref() else {
            return Vec::new();
        };
        self.members
            .values()
            .filter_map(|m| m.metadata(protocol))
            .collect()
    }

    /// The members, earliest joined first.
    pub(super) fn in_join_order(&self) -> Vec<&Member> {
        let mut members: Vec<&Member> = self.members.values().collect();
        members.sort_by_key(|m| m.seq);
        members
    }
}
