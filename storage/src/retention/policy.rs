//! What a queue's options say to delete, and how far a partition's log
//! start may move under them: a pure function of the partition's oldest
//! segments, so the rules are testable without a database.

use crate::options::QueueOptions;
use crate::topic_configs;

/// The deletion rules in force for a queue. Every rule deletes a prefix of
/// the log, whole segments at a time: a rule stops at the first segment it
/// must keep, so offsets below the log start are always gone and those at
/// or above it always readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct RetentionPolicy {
    /// Segments stored longer ago than this (ms) go, consumed or not:
    /// `retentionSeconds` / `retention.ms`, or eviction after
    /// `maxWaitTimeSeconds`, whichever is shorter.
    pub max_age_ms: Option<i64>,
    /// The partition keeps at most about this many bytes of segments:
    /// `retention.bytes`. The oldest segments go while what remains
    /// without them is still at least this large, as in Kafka.
    pub max_bytes: Option<i64>,
    /// Segments stored longer ago than this (ms) that every group on the
    /// partition has consumed go: `completedRetentionSeconds`.
    pub completed_age_ms: Option<i64>,
}

/// A segment as retention sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct SegmentHead {
    pub base_offset: i64,
    pub record_count: i64,
    pub created_at: i64,
    /// Its stored size, compressed or not.
    pub bytes: i64,
}

/// What the rules are measured against, besides the segments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartitionView {
    pub log_start: i64,
    /// The stored size of the segments from the log start on, when a size
    /// rule needs it.
    pub bytes: i64,
    /// The lowest committed offset of any group on the partition; `None`
    /// when no group has one (then nothing counts as consumed by all).
    pub min_committed: Option<i64>,
}

impl RetentionPolicy {
    /// The rules of a queue, or `None` when it keeps everything.
    pub(crate) fn of(options: &QueueOptions) -> Option<Self> {
        let seconds = |s: i64| (s > 0).then(|| s.saturating_mul(1000));
        let enabled = |rule: Option<i64>| rule.filter(|_| options.retention_enabled);
        // Kafka's size and age rules hold only under `cleanup.policy=delete`.
        let deletes = topic_configs::cleanup_policy(options).delete;
        let age = topic_configs::retention_ms(options).filter(|_| deletes);
        let evict = seconds(options.max_wait_time_seconds);
        let policy = Self {
            max_age_ms: match (age, evict) {
                (Some(a), Some(e)) => Some(a.min(e)),
                (a, e) => a.or(e),
            },
            max_bytes: topic_configs::retention_bytes(options).filter(|_| deletes),
            completed_age_ms: enabled(seconds(options.completed_retention_seconds)),
        };
        (policy != Self::default()).then_some(policy)
    }

    /// Whether the size rule needs the partition's size.
    pub(crate) fn needs_size(&self) -> bool {
        self.max_bytes.is_some()
    }

    /// Whether the consumed-by-all rule needs the groups' positions.
    pub(crate) fn needs_positions(&self) -> bool {
        self.completed_age_ms.is_some()
    }

    /// The partition's new log start: the end of the longest run of
    /// `heads` (its oldest segments, in offset order) that some rule
    /// deletes, and never below the current start.
    pub(crate) fn new_log_start(
        &self,
        heads: &[SegmentHead],
        view: PartitionView,
        now: i64,
    ) -> i64 {
        let older_than = |age: Option<i64>, h: &SegmentHead| {
            age.is_some_and(|age| h.created_at < now.saturating_sub(age))
        };
        let mut start = view.log_start;
        let mut remaining = view.bytes;
        for h in heads {
            let end = h.base_offset + h.record_count;
            let by_age = older_than(self.max_age_ms, h);
            let by_size = self.max_bytes.is_some_and(|max| remaining - h.bytes >= max);
            let consumed = view.min_committed.is_some_and(|m| end <= m);
            let by_completion = consumed && older_than(self.completed_age_ms, h);
            if !(by_age || by_size || by_completion) {
                break;
            }
            remaining -= h.bytes;
            start = start.max(end);
        }
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(base_offset: i64, created_at: i64) -> SegmentHead {
        SegmentHead {
            base_offset,
            record_count: 10,
            created_at,
            bytes: 100,
        }
    }

    fn view(bytes: i64, min_committed: Option<i64>) -> PartitionView {
        PartitionView {
            log_start: 0,
            bytes,
            min_committed,
        }
    }

    #[test]
    fn age_deletes_the_old_prefix_only() {
        let policy = RetentionPolicy {
            max_age_ms: Some(1_000),
            ..Default::default()
        };
        // The third segment is young: the fourth, old again (another
        // broker's clock), stays behind it.
        let heads = [head(0, 0), head(10, 500), head(20, 9_500), head(30, 0)];
        assert_eq!(policy.new_log_start(&heads, view(400, None), 10_000), 20);
    }

    #[test]
    fn size_keeps_at_least_the_limit() {
        let policy = RetentionPolicy {
            max_bytes: Some(250),
            ..Default::default()
        };
        let heads = [head(0, 0), head(10, 0), head(20, 0), head(30, 0)];
        // 400 bytes: dropping one leaves 300, two would leave 200 < 250.
        assert_eq!(policy.new_log_start(&heads, view(400, None), 0), 10);
    }

    #[test]
    fn completion_waits_for_every_group_and_the_age() {
        let policy = RetentionPolicy {
            completed_age_ms: Some(1_000),
            ..Default::default()
        };
        let heads = [head(0, 0), head(10, 0), head(20, 0)];
        assert_eq!(policy.new_log_start(&heads, view(300, Some(15)), 5_000), 10);
        assert_eq!(policy.new_log_start(&heads, view(300, None), 5_000), 0);
        assert_eq!(policy.new_log_start(&heads, view(300, Some(30)), 500), 0);
    }

    #[test]
    fn the_start_never_moves_back() {
        let policy = RetentionPolicy {
            max_age_ms: Some(1),
            ..Default::default()
        };
        let v = PartitionView {
            log_start: 15,
            ..view(100, None)
        };
        assert_eq!(policy.new_log_start(&[head(0, 0)], v, 100), 15);
    }

    #[test]
    fn options_without_rules_keep_everything() {
        assert_eq!(RetentionPolicy::of(&QueueOptions::default()), None);
        let off = QueueOptions {
            retention_seconds: 60,
            completed_retention_seconds: 60,
            ..QueueOptions::default()
        };
        assert_eq!(
            RetentionPolicy::of(&off),
            None,
            "retentionEnabled is the switch"
        );
        let evict = QueueOptions {
            max_wait_time_seconds: 5,
            ..QueueOptions::default()
        };
        assert_eq!(
            RetentionPolicy::of(&evict).and_then(|p| p.max_age_ms),
            Some(5_000),
            "eviction needs no switch"
        );
    }
}
