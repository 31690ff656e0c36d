//! The options of a queue: their defaults and their stored JSON form. Reading
//! them from a request, with its validation, is the HTTP layer's
//! (`src/http/options.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
