//! The options of a queue: their defaults, their validation and their JSON form.
//!
//! `POST /api/v1/configure` is a full replace, so [`QueueOptions::from_json`]
//! starts from the defaults and sets only what the request names: an option
//! left out, or sent as `null`, returns to its default.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

    /// Builds the options from a configure request's `options` object, as a full
    /// replace: absent and `null` options take their defaults, unknown keys are
    /// ignored. The error names the offending option.
    pub fn from_json(options: &Map<String, Value>) -> Result<Self, String> {
        let d = Self::default();
        let o = Options(options);
        Ok(Self {
            namespace: o.string("namespace")?,
            task: o.string("task")?,
            priority: o.int("priority", d.priority, i64::MIN, i64::MAX)?,
            lease_time: o.int("leaseTime", d.lease_time, 0, i64::MAX)?,
            retry_limit: o.int("retryLimit", d.retry_limit, 0, i64::MAX)?,
            retry_delay: o.int("retryDelay", d.retry_delay, 0, i64::MAX)?,
            max_size: o.int("maxSize", d.max_size, 0, i64::MAX)?,
            ttl: o.int("ttl", d.ttl, 0, i64::MAX)?,
            dead_letter_queue: o.boolean("deadLetterQueue", d.dead_letter_queue)?,
            dlq_after_max_retries: o.boolean("dlqAfterMaxRetries", d.dlq_after_max_retries)?,
            delayed_processing: o.int("delayedProcessing", d.delayed_processing, 0, i64::MAX)?,
            window_buffer: o.int("windowBuffer", d.window_buffer, 0, i64::MAX)?,
            retention_seconds: o.int("retentionSeconds", d.retention_seconds, 0, i64::MAX)?,
            completed_retention_seconds: o.int(
                "completedRetentionSeconds",
                d.completed_retention_seconds,
                0,
                i64::MAX,
            )?,
            retention_enabled: o.boolean("retentionEnabled", d.retention_enabled)?,
            encryption_enabled: o.boolean("encryptionEnabled", d.encryption_enabled)?,
            max_wait_time_seconds: o.int(
                "maxWaitTimeSeconds",
                d.max_wait_time_seconds,
                0,
                i64::MAX,
            )?,
            min_pop_wait_time: o.int("minPopWaitTime", d.min_pop_wait_time, 0, 60_000)?,
            dedup_window_seconds: o.int(
                "dedupWindowSeconds",
                d.dedup_window_seconds,
                0,
                i64::MAX,
            )?,
            retention_sink_hold: o.sink_hold()?,
            retention_sink_hold_max_seconds: o.int(
                "retentionSinkHoldMaxSeconds",
                d.retention_sink_hold_max_seconds,
                60,
                31_536_000,
            )?,
        })
    }
}

/// Typed look-ups in a JSON options object, with errors that name the option.
struct Options<'a>(&'a Map<String, Value>);

impl Options<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn int(&self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, String> {
        let Some(value) = self.get(key) else {
            return Ok(default);
        };
        let n = value
            .as_i64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| format!("{key} must be an integer"))?;
        if n < min || n > max {
            return Err(format!("{key} must be between {min} and {max}"));
        }
        Ok(n)
    }

    fn boolean(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("{key} must be a boolean")),
        }
    }

    fn string(&self, key: &str) -> Result<String, String> {
        match self.get(key) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("{key} must be a string")),
        }
    }

    fn sink_hold(&self) -> Result<String, String> {
        let hold = self.string("retentionSinkHold")?;
        let valid = hold.len() <= 64
            && hold
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if valid {
            Ok(hold)
        } else {
            Err("retentionSinkHold must match [A-Za-z0-9._-]{0,64}".to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<QueueOptions, String> {
        QueueOptions::from_json(v.as_object().expect("object"))
    }

    #[test]
    fn omitted_and_null_options_take_defaults() {
        let o = parse(json!({"leaseTime": 10, "dedupWindowSeconds": null})).expect("valid");
        assert_eq!(o.lease_time, 10);
        assert_eq!(o.dedup_window_seconds, DEFAULT_DEDUP_WINDOW_SECONDS);
        assert_eq!(o.retry_limit, 3);
    }

    #[test]
    fn wrong_types_name_the_option() {
        let err = parse(json!({"dedupWindowSeconds": "1h"})).expect_err("refused");
        assert_eq!(err, "dedupWindowSeconds must be an integer");
        let err = parse(json!({"retentionEnabled": 1})).expect_err("refused");
        assert_eq!(err, "retentionEnabled must be a boolean");
        let err = parse(json!({"dedupWindowSeconds": -1})).expect_err("refused");
        assert!(err.starts_with("dedupWindowSeconds must be between"));
        assert!(parse(json!({"retentionSinkHold": "a b"})).is_err());
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let o = parse(json!({"mode": "replace", "whatever": [1]})).expect("valid");
        assert_eq!(o, QueueOptions::default());
    }
}
