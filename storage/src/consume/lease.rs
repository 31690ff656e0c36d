//! Leases: one row per (partition, group) in `consumer_leases`.
//!
//! A pop claims the row with a conditional upsert that succeeds only when
//! the row is free at the engine's clock (never claimed, released, or
//! expired); on PostgreSQL the upsert holds the row lock until the pop
//! commits, and a concurrent claimer re-reads the committed row and finds
//! it taken. So an expired lease needs no background loop: it is simply
//! claimable, and its unacknowledged span is redelivered from the cursor.
//!
//! Renewal (`POST /api/v1/lease/{id}/extend`) only ever moves a live
//! lease's expiry forward.

/// What a renewal did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseExtension {
    /// How many partition leases were extended.
    pub renewed: usize,
    /// The earliest new expiry among them (ms), when any was extended.
    pub expires_at_ms: Option<i64>,
}
