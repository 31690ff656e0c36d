//! What a produce must meet per topic, from the topic's configs: the
//! largest batch (`max.message.bytes`), whether records need a key
//! (`cleanup.policy` with `compact`) and whose time they carry
//! (`message.timestamp.type`).
//!
//! A produce must not cost a catalog read: the rules are worked out from
//! the options the engine keeps per queue ([`storage::Engine::queue_options`]),
//! where this broker's own config changes (AlterConfigs, CreateTopics, the
//! HTTP configure) are seen at once and other brokers' within a second, as
//! Kafka's dynamic configs also reach its brokers a little later.

use storage::topic_configs;
use storage::QueueOptions;

use crate::records::TimestampType;

/// The rules a produce to one topic must meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProduceRules {
    /// The largest record batch accepted, in bytes (`MESSAGE_TOO_LARGE`).
    pub(crate) max_message_bytes: usize,
    /// Whether every record needs a key: a compacted topic refuses keyless
    /// records (`INVALID_RECORD`), as Kafka does.
    pub(crate) key_required: bool,
    /// Whether records take the broker's time when appended
    /// (`LogAppendTime`) rather than their producer's.
    pub(crate) log_append_time: bool,
}

impl ProduceRules {
    /// The rules of a topic with `options`, or of one that does not exist
    /// yet (`None`: it will be created with the defaults).
    pub(crate) fn of(options: Option<&QueueOptions>, broker_max_message_bytes: usize) -> Self {
        let Some(o) = options else {
            return Self {
                max_message_bytes: broker_max_message_bytes,
                key_required: false,
                log_append_time: false,
            };
        };
        let max = topic_configs::max_message_bytes(o, broker_max_message_bytes as i64);
        Self {
            max_message_bytes: usize::try_from(max).unwrap_or(0),
            key_required: topic_configs::cleanup_policy(o).compact,
            log_append_time: topic_configs::log_append_time(o),
        }
    }

    /// The timestamp type the topic's fetched batches state.
    pub(crate) fn timestamp_type(&self) -> TimestampType {
        if self.log_append_time {
            TimestampType::LogAppend
        } else {
            TimestampType::Create
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_follow_the_topic_configs() {
        let mut o = QueueOptions::for_kafka_topic();
        assert_eq!(
            ProduceRules::of(Some(&o), 100),
            ProduceRules {
                max_message_bytes: 100,
                key_required: false,
                log_append_time: false,
            }
        );
        o.topic_configs
            .insert("max.message.bytes".into(), "2048".into());
        o.topic_configs
            .insert("cleanup.policy".into(), "delete,compact".into());
        o.topic_configs
            .insert("message.timestamp.type".into(), "LogAppendTime".into());
        assert_eq!(
            ProduceRules::of(Some(&o), 100),
            ProduceRules {
                max_message_bytes: 2048,
                key_required: true,
                log_append_time: true,
            }
        );
        assert_eq!(ProduceRules::of(None, 7).max_message_bytes, 7);
    }
}
