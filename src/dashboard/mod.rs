//! The web dashboard at `/`: a page embedded in the binary ([`assets`])
//! that polls the HTTP API, and the read-only routes it needs beyond the
//! native API: live brokers, the traffic of the last 15 minutes
//! ([`history`] samples it) and the Kafka groups' membership.
//!
//! These routes read the Kafka broker and the traffic history, which the
//! native API's state does not carry, hence a router of their own. Every
//! route only reads, and answers a bounded amount.

mod assets;
mod brokers;
pub mod history;
mod kafka_groups;
mod throughput;

use std::sync::Arc;

use axum::routing::get;
use axum::Router;

pub use history::History;

/// What the dashboard's routes read.
#[derive(Debug, Clone)]
pub struct DashboardState {
    /// This broker's Kafka side: its id, the registry and its groups.
    pub broker: Arc<facade::Broker>,
    /// The traffic of the last 15 minutes.
    pub history: Arc<History>,
}

/// The page at `/` and the API routes it adds.
pub fn router(state: DashboardState) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/dashboard/{file}", get(assets::file))
        .route("/api/v1/brokers", get(brokers::list))
        .route("/api/v1/throughput", get(throughput::history))
        .route("/api/v1/kafka/groups", get(kafka_groups::list))
        .route_layer(axum::middleware::from_fn(crate::metrics::http::track))
        .with_state(state)
}
