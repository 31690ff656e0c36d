//! Groups of one kind by id, in memory: what the KIP-848 consumer groups
//! and the KIP-932 share groups keep alike (whether a group is known or has
//! members, forgetting an empty one, dropping those empty for long).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::group::{Ms, EMPTY_KEPT_MS};

/// A group as the registry sees it.
pub(super) trait Membership {
    /// Whether it has no members.
    fn is_empty(&self) -> bool;
    /// When its last member left.
    fn empty_since(&self) -> Ms;
}

/// Groups by id.
#[derive(Debug)]
pub(super) struct Registry<G>(Mutex<HashMap<String, G>>);

impl<G> Default for Registry<G> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<G: Membership> Registry<G> {
    /// The groups, locked.
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, G>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `group` is one of these (with or without members).
    pub(super) fn knows(&self, group: &str) -> bool {
        self.lock().contains_key(group)
    }

    /// Whether `group` is one of these with members.
    pub(super) fn is_busy(&self, group: &str) -> bool {
        self.lock().get(group).is_some_and(|g| !g.is_empty())
    }

    /// Forgets `group` if it is one of these without members; returns
    /// whether it was.
    pub(super) fn forget(&self, group: &str) -> bool {
        let mut groups = self.lock();
        match groups.get(group) {
            Some(g) if g.is_empty() => groups.remove(group).is_some(),
            _ => false,
        }
    }

    /// Drops from `groups` those empty for [`EMPTY_KEPT_MS`] by `now`.
    pub(super) fn sweep(groups: &mut HashMap<String, G>, now: Ms) {
        groups.retain(|_, g| !g.is_empty() || now < g.empty_since() + EMPTY_KEPT_MS);
    }
}
