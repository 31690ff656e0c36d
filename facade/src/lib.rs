//! The Kafka wire-protocol front door of the queen broker.
//!
//! Unmodified Kafka clients manage topics, produce and fetch here, on the
//! same storage the HTTP API serves: a topic is a queue, a Kafka partition
//! is a queue partition by its Kafka index, offsets are shared.
//!
//! Where things live:
//! - `listener`: the listeners (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
//!   each with its advertised address; `tls`: rustls from PEM files and the
//!   client certificate's principal; `auth/`: SASL (PLAIN, SCRAM) and the
//!   per-connection gate.
//! - `conn`: one connection's frames (after TLS, through its auth session),
//!   bounded by the maximum request size, answered in order.
//! - `handlers/`: dispatch (header, version check, codec) and one file per
//!   API; `versions`: the tables of implemented APIs and versions;
//!   `legacy/`: codecs of the versions older than the protocol crate's
//!   (message sets of magic 0 and 1, Fetch down-conversion), translating to
//!   and from the crate's structs so the same handlers serve them.
//! - `guard`: a schema walk that refuses impossible counts before the codec
//!   allocates for them.
//! - `authorized`: KIP-430's authorized operations, by the ACLs; the
//!   decision itself is `storage::Authorizer`'s, shared with the HTTP door.
//! - `groups`: membership of the consumer groups this broker coordinates
//!   (committed offsets are in the database).
//! - [`metrics`]: requests, errors and latency per API and version,
//!   rebalances and members per group (traffic by door is `telemetry`'s).
//! - `records`: record batches in (CRC, decompression within a budget) and
//!   out; `broker`: this broker's identity, registry heartbeat and the
//!   name-to-partition cache; `produce_rules`: the per-topic limits a
//!   produce meets (from the topic configs, cached); `topic_name`: the
//!   names Kafka lets a client create; `error`: storage errors as Kafka
//!   codes.
//!
//! A produce flows: `conn` reads the frame, `handlers::dispatch` decodes it
//! with `kafka-protocol`, `handlers::produce` resolves each partition and
//! decodes its batch with `records`, appends through the engine (committed
//! before the answer) and answers the base offsets.

pub mod auth;
mod authorized;
mod broker;
mod budget;
pub mod conn;
mod error;
mod groups;
mod guard;
pub mod handlers;
mod legacy;
pub mod listener;
pub mod metrics;
#[cfg(test)]
mod noise;
mod produce_rules;
pub mod records;
mod share;
pub mod tls;
mod topic_name;
mod varint;
pub mod versions;

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub use auth::SaslConfig;
pub use broker::Broker;
pub use groups::Limits as GroupLimits;
pub use listener::{Listener, SecurityProtocol};

/// Settings of the Kafka listener.
#[derive(Debug, Clone)]
pub struct FacadeConfig {
    /// The largest request frame accepted, in bytes; a larger length prefix
    /// closes the connection before anything is allocated.
    pub max_request_bytes: usize,
    /// The largest record batch accepted (`MESSAGE_TOO_LARGE` beyond).
    pub max_message_bytes: usize,
    /// The most a batch may grow to when decompressed.
    pub max_decompressed_bytes: usize,
    /// The listeners, each with the address its clients are told; the
    /// first one's is the broker's identity in the registry. Never empty.
    pub listeners: Vec<Arc<Listener>>,
    /// How SASL listeners authenticate.
    pub sasl: SaslConfig,
    /// Whether Metadata and Produce create unknown topics.
    pub auto_create_topics: bool,
    /// Partitions of an auto-created topic (and of CreateTopics with -1).
    pub default_partitions: i32,
    /// Connections served at once; more are closed on accept.
    pub max_connections: usize,
    /// Bytes of request frames read and not yet answered, across all
    /// connections; further reads wait (a larger request takes it all).
    pub max_in_flight_bytes: usize,
    /// Session timeout bounds and the initial rebalance delay of groups.
    pub group_limits: GroupLimits,
    /// Whether ACLs are enforced, and the super users.
    pub authorization: storage::AuthorizerConfig,
    /// The longest transaction timeout a transactional producer may ask
    /// for, in ms (Kafka's `transaction.max.timeout.ms`).
    pub transaction_max_timeout_ms: i32,
}

impl FacadeConfig {
    /// The first listener (a PLAINTEXT one on 127.0.0.1:9092 if, against
    /// the documented rule, none was given).
    pub fn primary_listener(&self) -> &Listener {
        static FALLBACK: std::sync::OnceLock<Arc<Listener>> = std::sync::OnceLock::new();
        self.listeners
            .first()
            .unwrap_or_else(|| FALLBACK.get_or_init(|| Listener::plaintext("127.0.0.1", 9092)))
    }
}

/// Accepts Kafka connections on every bound listener for the registered
/// `broker` until `shutdown` resolves, keeping its registration alive
/// meanwhile and withdrawing it then. The connection limit is shared by
/// all listeners.
pub async fn serve(
    listeners: Vec<(TcpListener, Arc<Listener>)>,
    broker: Arc<Broker>,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(broker.config.max_connections));
    let group_timers = {
        let broker = broker.clone();
        tokio::spawn(async move { broker.groups.run_timers().await })
    };
    let accepting: Vec<_> = listeners
        .into_iter()
        .map(|(socket, listener)| {
            tokio::spawn(accept_forever(
                socket,
                listener,
                broker.clone(),
                slots.clone(),
            ))
        })
        .collect();
    broker.heartbeat_until(shutdown).await;
    for task in accepting {
        task.abort();
    }
    group_timers.abort();
    broker.leave().await;
}

async fn accept_forever(
    socket: TcpListener,
    listener: Arc<Listener>,
    broker: Arc<Broker>,
    slots: Arc<Semaphore>,
) {
    loop {
        let (stream, peer) = match socket.accept().await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, listener = %listener.name, "kafka listener: accept failed");
                // Out of descriptors, say: do not spin.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "kafka: too many connections; closing");
            metrics::KAFKA.refused();
            continue;
        };
        // Counted open for as long as its task holds the slot.
        let open = telemetry::ConnectionGuard::open(telemetry::Door::Kafka);
        let (broker, listener) = (broker.clone(), listener.clone());
        tokio::spawn(async move {
            if let Err(e) = conn::accept(stream, peer, listener, broker).await {
                tracing::debug!(%peer, error = %e, "kafka connection closed");
            }
            drop((slot, open));
        });
    }
}
