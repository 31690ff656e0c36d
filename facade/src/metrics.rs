//! The Kafka front door's metrics: requests, errors and latency per API and
//! version, connections refused, rebalances and members per group.
//!
//! Every (API, version) of [`crate::versions::SUPPORTED`] has a slot for
//! its handles, filled on its first request (so that only the versions
//! clients use become series); afterwards counting a request is an array
//! index and atomic adds.
//! Label lookups happen only on what is rare: a request that fails,
//! a partition answered with an error, a rebalance, a scrape.

use std::sync::{LazyLock, OnceLock};
use std::time::Instant;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::ResponseError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use telemetry::{buckets, Histogram};

use crate::broker::Broker;
use crate::versions;

/// The labels of the per-request families.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    api: String,
    version: String,
}

/// The labels of per-partition errors.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ErrorLabels {
    api: String,
    error: String,
}

/// The label of per-group families.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct GroupLabel {
    group: String,
}

/// One (API, version)'s handles.
#[derive(Debug, Clone)]
pub(crate) struct RequestMetrics {
    requests: Counter,
    errors: Counter,
    seconds: Histogram,
}

impl RequestMetrics {
    /// Records a request answered (or failed) after `start`.
    pub(crate) fn done(&self, start: Instant, failed: bool) {
        self.seconds.observe_since(start);
        if failed {
            self.errors.inc();
        }
    }
}

/// The Kafka families of this process.
#[derive(Debug)]
pub struct KafkaMetrics {
    requests: Family<RequestLabels, Counter>,
    errors: Family<RequestLabels, Counter>,
    seconds: Family<RequestLabels, Histogram, fn() -> Histogram>,
    /// Handles by API key, then by version (from 0), filled on first use.
    table: Vec<Vec<OnceLock<RequestMetrics>>>,
    partition_errors: Family<ErrorLabels, Counter>,
    refused: Counter,
    rebalances: Family<GroupLabel, Counter>,
    members: Family<GroupLabel, Gauge>,
}

/// The Kafka metrics of this process.
pub static KAFKA: LazyLock<KafkaMetrics> = LazyLock::new(KafkaMetrics::new);

impl KafkaMetrics {
    fn new() -> Self {
        let mut m = Self {
            requests: Family::default(),
            errors: Family::default(),
            seconds: Family::new_with_constructor(|| Histogram::new(buckets::SECONDS)),
            table: Vec::new(),
            partition_errors: Family::default(),
            refused: Counter::default(),
            rebalances: Family::default(),
            members: Family::default(),
        };
        for &(api, _, max) in versions::SUPPORTED {
            let key = api as usize;
            if m.table.len() <= key {
                m.table.resize(key + 1, Vec::new());
            }
            m.table[key] = (0..=max).map(|_| OnceLock::new()).collect();
        }
        m
    }

    /// Creates (or finds) the series of one API and version.
    fn resolve(&self, api: ApiKey, version: i16) -> RequestMetrics {
        let labels = RequestLabels {
            api: format!("{api:?}"),
            version: version.to_string(),
        };
        RequestMetrics {
            requests: self.requests.get_or_create_owned(&labels),
            errors: self.errors.get_or_create_owned(&labels),
            seconds: self.seconds.get_or_create_owned(&labels),
        }
    }

    /// Counts a request of `api` and `version` and returns its handles.
    /// A version outside the table (an ApiVersions request from a newer
    /// client, answered anyway) takes the slow path.
    pub(crate) fn request(&self, api: ApiKey, version: i16) -> RequestMetrics {
        let handles = usize::try_from(version)
            .ok()
            .and_then(|v| self.table.get(api as usize)?.get(v))
            .map(|slot| slot.get_or_init(|| self.resolve(api, version)).clone())
            .unwrap_or_else(|| self.resolve(api, version));
        handles.requests.inc();
        handles
    }

    /// Counts a request that could not be decoded: `head` is its API key
    /// and version as read from the frame, if it had them.
    pub(crate) fn undecodable(&self, head: Option<(i16, i16)>) {
        let labels = match head {
            Some((key, version)) => RequestLabels {
                api: ApiKey::try_from(key)
                    .map(|api| format!("{api:?}"))
                    .unwrap_or_else(|_| "unknown".to_owned()),
                version: version.to_string(),
            },
            None => RequestLabels {
                api: "unknown".to_owned(),
                version: "unknown".to_owned(),
            },
        };
        self.requests.get_or_create(&labels).inc();
        self.errors.get_or_create(&labels).inc();
    }

    /// Counts a partition of an `api` answer that carries error `code`.
    pub(crate) fn partition_error(&self, api: ApiKey, code: i16) {
        if code == 0 {
            return;
        }
        let error = ResponseError::try_from_code(code)
            .map(|e| format!("{e:?}"))
            .unwrap_or_else(|| code.to_string());
        self.partition_errors
            .get_or_create(&ErrorLabels {
                api: format!("{api:?}"),
                error,
            })
            .inc();
    }

    /// Counts a connection closed at once because the limit was reached.
    pub(crate) fn refused(&self) {
        self.refused.inc();
    }

    /// Counts a completed rebalance (a new generation) of `group`.
    pub(crate) fn rebalanced(&self, group: &str) {
        self.rebalances
            .get_or_create(&GroupLabel {
                group: group.to_owned(),
            })
            .inc();
    }
}

/// Registers the Kafka families into `registry` (prefixed `queen`).
pub fn register(registry: &mut Registry) {
    let m = &*KAFKA;
    registry.register(
        "kafka_requests",
        "Kafka requests received, per API and version",
        m.requests.clone(),
    );
    registry.register(
        "kafka_request_errors",
        "Kafka requests that failed as a whole (undecodable, unsupported version, unencodable answer: the connection is closed)",
        m.errors.clone(),
    );
    registry.register(
        "kafka_request_duration_seconds",
        "Kafka request latency, from the frame read to the answer ready (a produce: committed; a fetch: including its wait)",
        m.seconds.clone(),
    );
    registry.register(
        "kafka_partition_errors",
        "Partitions of Produce and Fetch answers that carry an error code, per API and error",
        m.partition_errors.clone(),
    );
    registry.register(
        "kafka_connections_refused",
        "Kafka connections closed on accept because --max-kafka-connections were open",
        m.refused.clone(),
    );
    registry.register(
        "kafka_group_rebalances",
        "Completed rebalances (new generations) of the Kafka consumer groups this broker coordinates",
        m.rebalances.clone(),
    );
    registry.register(
        "kafka_group_members",
        "Members of the Kafka consumer groups this broker coordinates",
        m.members.clone(),
    );
}

/// Reads the groups' membership into the members family; called by a
/// scrape before encoding (groups that went away disappear).
pub fn refresh(broker: &Broker) {
    let members = &KAFKA.members;
    members.clear();
    for (group, summary) in broker.groups.list() {
        members
            .get_or_create(&GroupLabel { group })
            .set(summary.members.len() as i64);
    }
}

/// The API key and version at the start of a request frame, if it has them.
pub(crate) fn head(frame: &[u8]) -> Option<(i16, i16)> {
    match frame {
        [k0, k1, v0, v1, ..] => Some((
            i16::from_be_bytes([*k0, *k1]),
            i16::from_be_bytes([*v0, *v1]),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_version_has_its_handles_once_used() {
        let labels = |api: ApiKey, version: i16| RequestLabels {
            api: format!("{api:?}"),
            version: version.to_string(),
        };
        assert!(
            KAFKA
                .requests
                .get(&labels(ApiKey::DescribeProducers, 0))
                .is_none(),
            "no series before the first request"
        );
        for &(api, min, max) in versions::SUPPORTED {
            for version in min..=max {
                let before = KAFKA.request(api, version).requests.get();
                let again = KAFKA.request(api, version);
                assert_eq!(again.requests.get(), before + 1, "{api:?} v{version}");
            }
        }
        let outside = KAFKA.request(ApiKey::ApiVersions, 99);
        assert_eq!(outside.requests.get(), 1, "a version outside the table");
    }
}
