//! The options of a configure request (3.1), read into
//! [`storage::QueueOptions`].
//!
//! Configure is a full replace, so the options start from the defaults and
//! take only what the request names: an option left out, or sent as `null`,
//! returns to its default. Unknown keys are ignored. Each field is read
//! loosely here, so that the error names the option the way clients have
//! always been told (`leaseTime must be an integer`); the ranges are the
//! storage's ([`storage::options`]), which the Kafka `queen.<option>`
//! configs meet too.

use serde::Deserialize;
use serde_json::Number;
use storage::{options, QueueOptions};

use super::lenient::Loose;

/// The options as a configure request carries them (camelCase, as the spec
/// names them).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct OptionsBody {
    /// Grouping label for namespace pops.
    pub namespace: Loose<String>,
    /// Grouping label for task pops.
    pub task: Loose<String>,
    priority: Loose<Number>,
    lease_time: Loose<Number>,
    retry_limit: Loose<Number>,
    retry_delay: Loose<Number>,
    max_size: Loose<Number>,
    ttl: Loose<Number>,
    dead_letter_queue: Loose<bool>,
    dlq_after_max_retries: Loose<bool>,
    delayed_processing: Loose<Number>,
    window_buffer: Loose<Number>,
    retention_seconds: Loose<Number>,
    completed_retention_seconds: Loose<Number>,
    retention_enabled: Loose<bool>,
    encryption_enabled: Loose<bool>,
    max_wait_time_seconds: Loose<Number>,
    min_pop_wait_time: Loose<Number>,
    dedup_window_seconds: Loose<Number>,
    retention_sink_hold: Loose<String>,
    retention_sink_hold_max_seconds: Loose<Number>,
}

impl OptionsBody {
    /// Checks every option and fills the defaults. The error names the
    /// offending option.
    pub(super) fn into_options(self) -> Result<QueueOptions, String> {
        let d = QueueOptions::default();
        Ok(QueueOptions {
            namespace: string(self.namespace, "namespace")?,
            task: string(self.task, "task")?,
            priority: int(self.priority, "priority", d.priority)?,
            lease_time: int(self.lease_time, "leaseTime", d.lease_time)?,
            retry_limit: int(self.retry_limit, "retryLimit", d.retry_limit)?,
            retry_delay: int(self.retry_delay, "retryDelay", d.retry_delay)?,
            max_size: int(self.max_size, "maxSize", d.max_size)?,
            ttl: int(self.ttl, "ttl", d.ttl)?,
            dead_letter_queue: boolean(
                self.dead_letter_queue,
                "deadLetterQueue",
                d.dead_letter_queue,
            )?,
            dlq_after_max_retries: boolean(
                self.dlq_after_max_retries,
                "dlqAfterMaxRetries",
                d.dlq_after_max_retries,
            )?,
            delayed_processing: int(
                self.delayed_processing,
                "delayedProcessing",
                d.delayed_processing,
            )?,
            window_buffer: int(self.window_buffer, "windowBuffer", d.window_buffer)?,
            retention_seconds: int(
                self.retention_seconds,
                "retentionSeconds",
                d.retention_seconds,
            )?,
            completed_retention_seconds: int(
                self.completed_retention_seconds,
                "completedRetentionSeconds",
                d.completed_retention_seconds,
            )?,
            retention_enabled: boolean(
                self.retention_enabled,
                "retentionEnabled",
                d.retention_enabled,
            )?,
            encryption_enabled: boolean(
                self.encryption_enabled,
                "encryptionEnabled",
                d.encryption_enabled,
            )?,
            max_wait_time_seconds: int(
                self.max_wait_time_seconds,
                "maxWaitTimeSeconds",
                d.max_wait_time_seconds,
            )?,
            min_pop_wait_time: int(
                self.min_pop_wait_time,
                "minPopWaitTime",
                d.min_pop_wait_time,
            )?,
            dedup_window_seconds: int(
                self.dedup_window_seconds,
                "dedupWindowSeconds",
                d.dedup_window_seconds,
            )?,
            retention_sink_hold: sink_hold(self.retention_sink_hold)?,
            retention_sink_hold_max_seconds: int(
                self.retention_sink_hold_max_seconds,
                "retentionSinkHoldMaxSeconds",
                d.retention_sink_hold_max_seconds,
            )?,
            // Kafka topic configs are set over Kafka; configure carries
            // the queue's existing ones over (see `configure`).
            topic_configs: Default::default(),
        })
    }
}

/// An integer option within its range ([`options::int_range`]). A float
/// without a fraction counts as an integer (JavaScript clients send
/// `300.0`); one beyond `i64` saturates and then meets the range check.
fn int(value: Loose<Number>, key: &str, default: i64) -> Result<i64, String> {
    let Ok(value) = value.optional() else {
        return Err(format!("{key} must be an integer"));
    };
    let Some(value) = value else {
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
    options::check_int(key, n)
}

fn boolean(value: Loose<bool>, key: &str, default: bool) -> Result<bool, String> {
    value
        .optional()
        .map(|b| b.unwrap_or(default))
        .map_err(|()| format!("{key} must be a boolean"))
}

fn string(value: Loose<String>, key: &str) -> Result<String, String> {
    value
        .optional()
        .map(Option::unwrap_or_default)
        .map_err(|()| format!("{key} must be a string"))
}

fn sink_hold(value: Loose<String>) -> Result<String, String> {
    let hold = string(value, "retentionSinkHold")?;
    options::check_sink_hold(&hold)?;
    Ok(hold)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use storage::options::DEFAULT_DEDUP_WINDOW_SECONDS;

    fn parse(v: Value) -> Result<QueueOptions, String> {
        serde_json::from_value::<OptionsBody>(v)
            .expect("an object always reads")
            .into_options()
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

    #[test]
    fn whole_floats_are_integers() {
        let o = parse(json!({"leaseTime": 30.0})).expect("valid");
        assert_eq!(o.lease_time, 30);
        assert!(parse(json!({"leaseTime": 30.5})).is_err());
    }
}
