//! Every SQL statement, one file per concern, each written once for both
//! backends (see [`crate::backend`] for what differs between them).
//!
//! [`catalog`]: queues and partitions; [`segments`]: reading partitions
//! back; [`dedup`]: the transaction-id sidecar; [`brokers`]: the broker
//! registry; [`offsets`]: committed positions as Kafka groups see them;
//! [`producers`]: Kafka producer ids and state; [`kv`]: the key/value store;
//! [`consume`]: pops and acks (leases, cursors); [`groups`]: consumer groups'
//! positions, subscriptions and admin; [`dead_letters`]: the DLQ;
//! [`retention`]: log-start movement, deleting segments, duty leases;
//! [`stats`]: what a metrics scrape reads, aggregated by the database.
//! [`users`]: SCRAM credentials; [`acls`]: Kafka ACLs; [`reseal`]: sealed
//! payloads rewritten for a key rotation; [`resource_configs`]: configs of
//! brokers and groups.

pub(crate) mod acls;
pub(crate) mod brokers;
pub(crate) mod catalog;
pub(crate) mod consume;
pub(crate) mod dead_letters;
pub(crate) mod dedup;
pub(crate) mod groups;
pub(crate) mod kv;
pub(crate) mod mirror;
pub(crate) mod offsets;
pub(crate) mod producers;
pub(crate) mod reseal;
pub(crate) mod resource_configs;
pub(crate) mod retention;
pub(crate) mod segments;
pub(crate) mod stats;
pub(crate) mod transactions;

/// A client's string kept as bytes (PostgreSQL's TEXT cannot hold NUL),
/// read back. Only strings were stored, so only a hand-edited row is not
/// UTF-8; it reads with replacement characters rather than failing.
pub(crate) fn text(bytes: Option<Vec<u8>>) -> Option<String> {
    bytes.map(|b| {
        String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    })
}
pub(crate) mod users;
