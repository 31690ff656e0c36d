//! The native HTTP API of Queen MQ: parse, call the engine, render.
//!
//! One file per resource; `error` maps every failure to a status and a JSON
//! body; `body` reads JSON bodies; `render` holds shared output shapes.

mod body;
mod configure;
mod error;
mod health;
mod push;
mod queues;
mod render;

use std::future::Future;

use axum::routing::{get, post};
use axum::Router;
use storage::Engine;
use tokio::net::TcpListener;

pub use error::ApiError;

/// What every handler can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The storage engine.
    pub engine: Engine,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
}

/// Every route of the HTTP API.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health::health))
        .route("/api/v1/configure", post(configure::configure))
        .route("/api/v1/push", post(push::push))
        .route("/api/v1/resources/queues", get(queues::list))
        .route(
            "/api/v1/resources/queues/{queue}",
            get(queues::get).delete(queues::delete),
        )
        .fallback(|| async { ApiError::NoSuchRoute })
        .with_state(state)
}

/// Serves the API on `listener` until `shutdown` resolves, then lets the
/// requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}
