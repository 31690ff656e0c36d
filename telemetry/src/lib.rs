//! Prometheus metrics shared by the queen crates.
//!
//! Each crate keeps its own families in a `metrics` module (a `static`
//! built on first use) and registers them into the broker's registry at
//! start-up; this crate holds what they share:
//! - [`Histogram`]: a histogram whose observations are a few atomic adds
//!   (`prometheus-client`'s own takes a mutex per observation);
//! - [`buckets`]: the bucket bounds every latency and size histogram uses;
//! - [`traffic`]: the families both front doors feed (bytes and records in
//!   and out, produce batch sizes, long polls), labelled by [`Door`].
//!
//! Hot paths touch only pre-built handles (atomics); label lookups happen
//! at start-up, on rare events (rebalances) or at scrape time.

pub mod buckets;
mod histogram;
pub mod traffic;

pub use histogram::Histogram;
pub use prometheus_client;
pub use prometheus_client::registry::Registry;
pub use traffic::{ConnectionGuard, Door, DoorTraffic, TRAFFIC};

/// Registers the shared families into `registry` (which carries the
/// `queen` prefix).
pub fn register(registry: &mut Registry) {
    TRAFFIC.register(registry);
}
