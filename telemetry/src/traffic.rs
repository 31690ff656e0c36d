//! The families both front doors feed, labelled by [`Door`].

use std::sync::LazyLock;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::{buckets, Histogram};

/// Which front door traffic came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Door {
    /// The Kafka wire protocol.
    Kafka,
    /// The native HTTP API.
    Http,
}

impl Door {
    /// The label value: `kafka` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Kafka => "kafka",
            Self::Http => "http",
        }
    }
}

impl EncodeLabelValue for Door {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

/// The label set of the per-door families.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DoorLabel {
    door: Door,
}

type Histograms = Family<DoorLabel, Histogram, fn() -> Histogram>;

/// One door's handles, resolved once: updating them is atomic adds only.
#[derive(Debug, Clone)]
pub struct DoorTraffic {
    /// Records accepted (Kafka Produce, HTTP push), counted per batch.
    pub records_in: Counter,
    /// Payload bytes accepted: record batches as sent, pushed payloads.
    pub bytes_in: Counter,
    /// Records delivered (Kafka Fetch, HTTP pop).
    pub records_out: Counter,
    /// Payload bytes delivered.
    pub bytes_out: Counter,
    /// Records per accepted batch (a Kafka partition batch, an HTTP push).
    pub batch_records: Histogram,
    /// Bytes per accepted batch.
    pub batch_bytes: Histogram,
    /// How long long polls took (Kafka Fetch with `max_wait_ms` > 0, HTTP
    /// pop with `wait=true`): arrival to answer.
    pub long_poll_seconds: Histogram,
    /// Connections open now.
    pub connections: Gauge,
}

/// The per-door families and each door's handles.
#[derive(Debug)]
pub struct Traffic {
    kafka: DoorTraffic,
    http: DoorTraffic,
    records_in: Family<DoorLabel, Counter>,
    bytes_in: Family<DoorLabel, Counter>,
    records_out: Family<DoorLabel, Counter>,
    bytes_out: Family<DoorLabel, Counter>,
    batch_records: Histograms,
    batch_bytes: Histograms,
    long_poll: Histograms,
    connections: Family<DoorLabel, Gauge>,
}

/// The traffic of this process.
pub static TRAFFIC: LazyLock<Traffic> = LazyLock::new(Traffic::new);

impl Traffic {
    fn new() -> Self {
        let records_in = Family::<DoorLabel, Counter>::default();
        let bytes_in = Family::<DoorLabel, Counter>::default();
        let records_out = Family::<DoorLabel, Counter>::default();
        let bytes_out = Family::<DoorLabel, Counter>::default();
        let batch_records: Histograms =
            Family::new_with_constructor(|| Histogram::new(buckets::RECORDS));
        let batch_bytes: Histograms =
            Family::new_with_constructor(|| Histogram::new(buckets::BYTES));
        let long_poll: Histograms =
            Family::new_with_constructor(|| Histogram::new(buckets::SECONDS));
        let connections = Family::<DoorLabel, Gauge>::default();
        let door = |door: Door| {
            let label = DoorLabel { door };
            DoorTraffic {
                records_in: records_in.get_or_create_owned(&label),
                bytes_in: bytes_in.get_or_create_owned(&label),
                records_out: records_out.get_or_create_owned(&label),
                bytes_out: bytes_out.get_or_create_owned(&label),
                batch_records: batch_records.get_or_create_owned(&label),
                batch_bytes: batch_bytes.get_or_create_owned(&label),
                long_poll_seconds: long_poll.get_or_create_owned(&label),
                connections: connections.get_or_create_owned(&label),
            }
        };
        Self {
            kafka: door(Door::Kafka),
            http: door(Door::Http),
            records_in,
            bytes_in,
            records_out,
            bytes_out,
            batch_records,
            batch_bytes,
            long_poll,
            connections,
        }
    }

    /// The handles of one door.
    pub fn door(&self, door: Door) -> &DoorTraffic {
        match door {
            Door::Kafka => &self.kafka,
            Door::Http => &self.http,
        }
    }

    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "records_in",
            "Records accepted (Kafka Produce, HTTP push)",
            self.records_in.clone(),
        );
        registry.register(
            "bytes_in",
            "Payload bytes accepted: Kafka record batches as sent, HTTP pushed payloads",
            self.bytes_in.clone(),
        );
        registry.register(
            "records_out",
            "Records delivered (Kafka Fetch, HTTP pop)",
            self.records_out.clone(),
        );
        registry.register(
            "bytes_out",
            "Payload bytes delivered: Kafka record batches, HTTP popped payloads",
            self.bytes_out.clone(),
        );
        registry.register(
            "produce_batch_records",
            "Records per accepted batch (a Kafka partition batch, an HTTP push request)",
            self.batch_records.clone(),
        );
        registry.register(
            "produce_batch_bytes",
            "Bytes per accepted batch (a Kafka partition batch, an HTTP push request)",
            self.batch_bytes.clone(),
        );
        registry.register(
            "long_poll_duration_seconds",
            "Duration of long polls (Kafka Fetch with max_wait_ms > 0, HTTP pop with wait=true), arrival to answer",
            self.long_poll.clone(),
        );
        registry.register(
            "connections_open",
            "Client connections open now",
            self.connections.clone(),
        );
    }
}

/// Counts a connection open until dropped.
#[derive(Debug)]
pub struct ConnectionGuard(Gauge);

impl ConnectionGuard {
    /// Counts one more open connection through `door`.
    pub fn open(door: Door) -> Self {
        let gauge = TRAFFIC.door(door).connections.clone();
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}
