//! The options of a queue: their defaults, their stored JSON form and the
//! rules their values must meet. Both doors check values here: the HTTP
//! configure (`src/http/options.rs`, which reads a request's loose JSON)
//! and the Kafka `queen.<option>` configs ([`crate::topic_configs`]).
//! Changing the options of an existing queue in place
//! ([`Engine::update_options`]) lives here too.

use std::collections::BTreeMap;
use std::convert::Infallible;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};
use crate::model::{QueueInfo, DEFAULT_PARTITION};
use crate::Engine;

/// Every option a queue carries. Field names are the wire names of the HTTP API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueOptions {
    /// Grouping label for namespace pops.
    pub namespace: String,
    /// Grouping label for task pops.
    pub task: String,
    /// Higher-priority queues are served first by namespace/task pops.
    pub priority: i64,
    /// Lease length granted by a pop, in seconds.
    pub lease_time: i64,
    /// `failed` acks tolerated per cursor before a message is dead-lettered.
    pub retry_limit: i64,
    /// Stored and echoed (milliseconds).
    pub retry_delay: i64,
    /// Stored and echoed; 0 is unlimited.
    pub max_size: i64,
    /// Stored and echoed (seconds).
    pub ttl: i64,
    /// Whether the dead-letter queue is enabled.
    pub dead_letter_queue: bool,
    /// Whether a message is dead-lettered when its retries are exhausted.
    pub dlq_after_max_retries: bool,
    /// A message becomes visible this many seconds after it was stored.
    pub delayed_processing: i64,
    /// A partition is served only after it has been quiet this many seconds.
    pub window_buffer: i64,
    /// Age-based deletion of messages, in seconds (0 keeps them).
    pub retention_seconds: i64,
    /// Deletion of messages every group has consumed, in seconds (0 keeps them).
    pub completed_retention_seconds: i64,
    /// Master switch for both retention rules.
    pub retention_enabled: bool,
    /// At-rest payload encryption.
    pub encryption_enabled: bool,
    /// Messages waiting longer than this many seconds are evicted (0 is off).
    pub max_wait_time_seconds: i64,
    /// How long a waiting pop may hold an under-full batch, in milliseconds.
    pub min_pop_wait_time: i64,
    /// The dedup window in seconds; 0 turns the check off.
    pub dedup_window_seconds: i64,
    /// Stored and echoed.
    pub retention_sink_hold: String,
    /// Stored and echoed.
    pub retention_sink_hold_max_seconds: i64,
    /// The Kafka topic configs set on this queue, exactly as given (name to
    /// value); a config absent here has its default. `retention.ms` is kept
    /// in step with `retentionSeconds`: its exact value counts only while it
    /// rounds up to that option.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub topic_configs: BTreeMap<String, String>,
}

/// The dedup window of a queue that was not configured otherwise, in seconds.
pub const DEFAULT_DEDUP_WINDOW_SECONDS: i64 = 3600;

impl Default for QueueOptions {
    fn default() -> Self {
        Self {
            namespace: String::new(),
            task: String::new(),
            priority: 0,
            lease_time: 300,
            retry_limit: 3,
            retry_delay: 1000,
            max_size: 0,
            ttl: 3600,
            dead_letter_queue: true,
            dlq_after_max_retries: true,
            delayed_processing: 0,
            window_buffer: 0,
            retention_seconds: 0,
            completed_retention_seconds: 0,
            retention_enabled: false,
            encryption_enabled: false,
            max_wait_time_seconds: 0,
            min_pop_wait_time: 0,
            dedup_window_seconds: DEFAULT_DEDUP_WINDOW_SECONDS,
            retention_sink_hold: String::new(),
            retention_sink_hold_max_seconds: 604_800,
            topic_configs: BTreeMap::new(),
        }
    }
}

/// The valid values of an integer option (inclusive), by its wire name.
pub fn int_range(key: &str) -> (i64, i64) {
    match key {
        "priority" => (i64::MIN, i64::MAX),
        "minPopWaitTime" => (0, 60_000),
        "retentionSinkHoldMaxSeconds" => (60, 31_536_000),
        _ => (0, i64::MAX),
    }
}

/// Checks an integer option against [`int_range`]; the error names the
/// option (`leaseTime must be between 0 and …`).
pub fn check_int(key: &str, value: i64) -> Result<i64, String> {
    let (min, max) = int_range(key);
    if value < min || value > max {
        return Err(format!("{key} must be between {min} and {max}"));
    }
    Ok(value)
}

/// Checks `retentionSinkHold`: at most 64 of `[A-Za-z0-9._-]`.
pub fn check_sink_hold(hold: &str) -> Result<(), String> {
    let valid = hold.len() <= 64
        && hold
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err("retentionSinkHold must match [A-Za-z0-9._-]{0,64}".to_owned())
    }
}

impl QueueOptions {
    /// The options of a topic created over Kafka: the defaults with dedup off,
    /// since every Kafka record gets a freshly minted transaction id.
    pub fn for_kafka_topic() -> Self {
        Self {
            dedup_window_seconds: 0,
            ..Self::default()
        }
    }
}

/// What [`Engine::update_options`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionsUpdate<E> {
    /// The options were stored; these are they.
    Updated(Box<QueueOptions>),
    /// The change refused; nothing was written.
    Refused(E),
    /// There is no such queue.
    NoQueue,
}

impl Engine {
    /// Changes the options of an existing queue in place: `change` gets the
    /// stored options and answers the new ones (or refuses), in one write
    /// transaction under the queue row's lock, so that two changes at once
    /// (a Kafka AlterConfigs, an HTTP configure) each start from the
    /// other's result. Partitions and messages are untouched.
    pub async fn update_options<E>(
        &self,
        name: &str,
        change: impl FnOnce(&QueueOptions) -> std::result::Result<QueueOptions, E>,
    ) -> Result<OptionsUpdate<E>> {
        let mut tx = self.inner.store.begin_write().await?;
        let mut conn = tx.conn();
        let Some((queue_id, old)) =
            crate::sql::catalog::options_for_update(&mut conn, name).await?
        else {
            return Ok(OptionsUpdate::NoQueue);
        };
        let new = match change(&old) {
            Ok(new) => new,
            Err(e) => return Ok(OptionsUpdate::Refused(e)),
        };
        self.check_sealable(&new)?;
        crate::sql::catalog::set_options(&mut conn, queue_id, &new).await?;
        tx.commit().await?;
        self.inner.partitions.forget_queue(name);
        Ok(OptionsUpdate::Updated(Box::new(new)))
    }

    /// The native configure: creates the queue with `options`, or replaces
    /// every native option of an existing one while keeping its Kafka topic
    /// configs ([`crate::topic_configs::carry_over`]: HTTP clients do not
    /// know them). The `Default` partition is created if missing.
    pub async fn configure_keeping_topic_configs(
        &self,
        name: &str,
        options: &QueueOptions,
    ) -> Result<QueueInfo> {
        crate::validate_name("queue name", name)?;
        let update = self
            .update_options(name, |old| {
                Ok::<_, Infallible>(crate::topic_configs::carry_over(old, options.clone()))
            })
            .await?;
        match update {
            OptionsUpdate::Updated(stored) => {
                let now = self.inner.clock.now_ms();
                crate::sql::catalog::ensure_partition(
                    &self.inner.store,
                    name,
                    DEFAULT_PARTITION,
                    &stored,
                    now,
                )
                .await?;
                self.queue(name)
                    .await?
                    .ok_or_else(|| StorageError::QueueNotFound(name.to_owned()))
            }
            OptionsUpdate::NoQueue => self.configure_queue(name, options).await,
            OptionsUpdate::Refused(never) => match never {},
        }
    }
}
