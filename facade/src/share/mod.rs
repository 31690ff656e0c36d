//! KIP-932 share groups on the native engine: what ShareFetch and
//! ShareAcknowledge do with records. Acquiring is a native pop of the
//! group (its lease is the acquisition lock), ACCEPT is an ack
//! `completed`, RELEASE a `retry`, REJECT a `dlq`, and a record delivered
//! more than `share.delivery.count.limit` times is dead-lettered. The
//! membership and sessions are in `crate::groups::share`.

pub(crate) mod acknowledge;
pub(crate) mod acquire;
pub(crate) mod config;
pub(crate) mod release;
pub(crate) mod target;

/// The dead-letter error of a record delivered too often.
pub(crate) const EXHAUSTED: &str = "delivery count limit reached (share.delivery.count.limit)";
