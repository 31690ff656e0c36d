//! The share-group configs of KIP-932 that this broker honours, set per
//! group with IncrementalAlterConfigs on a GROUP resource (as
//! `kafka-configs --entity-type groups` does) and kept with the other group
//! configs (`storage::resource_configs`, which checks them), so every broker
//! of a shared database reads the same.

use storage::resource_configs::ConfigResource;
use storage::{Engine, StorageError, SubscriptionMode};

/// `share.record.lock.duration.ms`: how long an acquired record is locked.
pub(crate) const LOCK_DURATION: &str = "share.record.lock.duration.ms";
/// `share.delivery.count.limit`: deliveries before a record is dead-lettered.
pub(crate) const DELIVERY_LIMIT: &str = "share.delivery.count.limit";
/// `share.auto.offset.reset`: where a new share group starts.
pub(crate) const AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";

/// A group's share configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShareConfig {
    /// The acquisition lock, ms.
    pub(crate) lock_ms: i64,
    /// The most deliveries of a record.
    pub(crate) delivery_limit: i16,
    /// Where the group starts on a partition it has not consumed.
    pub(crate) start: SubscriptionMode,
}

impl Default for ShareConfig {
    fn default() -> Self {
        Self {
            lock_ms: 30_000,
            delivery_limit: 5,
            start: SubscriptionMode::New,
        }
    }
}

impl ShareConfig {
    /// The lock as the native lease counts it: whole seconds, rounded up.
    pub(crate) fn lease_seconds(&self) -> i64 {
        (self.lock_ms + 999) / 1000
    }
}

/// The share configs of `group`: those set, the defaults otherwise.
pub(crate) async fn load(engine: &Engine, group: &str) -> Result<ShareConfig, StorageError> {
    let set = engine
        .resource_configs(&ConfigResource::Group(group.into()))
        .await?;
    let mut config = ShareConfig::default();
    if let Some(v) = set.get(LOCK_DURATION).and_then(|v| v.parse().ok()) {
        config.lock_ms = v;
    }
    if let Some(v) = set.get(DELIVERY_LIMIT).and_then(|v| v.parse().ok()) {
        config.delivery_limit = v;
    }
    if set.get(AUTO_OFFSET_RESET).map(String::as_str) == Some("earliest") {
        config.start = SubscriptionMode::All;
    }
    Ok(config)
}
