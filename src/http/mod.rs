//! The native HTTP API of Queen MQ: parse, call the engine, render.
//!
//! One file per resource. Each route reads its body or query into a
//! `#[derive(Deserialize)]` struct (`body` holds the extractors,
//! `lenient` the serde helpers for the loosely typed fields clients send,
//! `options` the queue options of a configure); `error` builds every error
//! body; `render` holds shared output shapes; `authorize` checks the ACLs.

mod ack;
pub mod auth;
pub mod authorize;
mod binary;
mod body;
mod configure;
mod consumer_groups;
mod content;
mod dlq;
mod error;
mod health;
mod kv;
mod lease;
mod lenient;
mod messages;
mod mirror;
mod options;
mod pop;
mod push;
mod queues;
mod render;
mod reserved;
pub mod tls;
mod transaction;

use std::future::Future;
use std::sync::Arc;

use axum::routing::{delete, get, post};
use axum::Router;
use storage::{Authorizer, Engine, SubscriptionMode};
use tokio::net::TcpListener;

pub use error::ApiError;

/// What every handler can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The storage engine.
    pub engine: Engine,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Where a named consumer group starts when its first pop names no
    /// subscription mode.
    pub default_subscription: SubscriptionMode,
    /// What callers may do: the broker's one authorizer, shared with the
    /// Kafka door.
    pub authorizer: Arc<Authorizer>,
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
        .route("/api/v1/resources/queues/{queue}/depth", get(queues::depth))
        .route("/api/v1/pop", get(pop::matching))
        .route("/api/v1/pop/queue/{queue}", get(pop::queue))
        .route(
            "/api/v1/pop/queue/{queue}/partition/{partition}",
            get(pop::partition),
        )
        .route("/api/v1/ack", post(ack::single))
        .route("/api/v1/ack/batch", post(ack::batch))
        .route("/api/v1/lease/{lease}/extend", post(lease::extend))
        .route("/api/v1/kv", post(kv::kv))
        .route("/api/v1/transaction", post(transaction::transaction))
        .route("/api/v1/dlq", get(dlq::list))
        .route("/api/v1/mirror/status", get(mirror::status))
        .route("/api/v1/mirror/{topic}/fence", post(mirror::fence))
        .route(
            "/api/v1/messages/{partition}/{transaction}",
            get(messages::get),
        )
        // `lagging` before `{group}`: a literal segment must win.
        .route("/api/v1/consumer-groups", get(consumer_groups::list))
        .route(
            "/api/v1/consumer-groups/lagging",
            get(consumer_groups::lagging),
        )
        .route(
            "/api/v1/consumer-groups/{group}",
            get(consumer_groups::describe).delete(consumer_groups::delete),
        )
        .route(
            "/api/v1/consumer-groups/{group}/queues/{queue}",
            delete(consumer_groups::delete_for_queue),
        )
        .route(
            "/api/v1/consumer-groups/{group}/queues/{queue}/seek",
            post(consumer_groups::seek),
        )
        .route(
            "/api/v1/consumer-groups/{group}/subscription",
            post(consumer_groups::subscription),
        )
        .route(
            "/api/v1/stats/refresh",
            post(consumer_groups::refresh_stats),
        )
        // Counts and times every matched route by its template; the
        // fallback is counted as route `unmatched` by the same function.
        .route_layer(axum::middleware::from_fn(crate::metrics::http::track))
        .fallback_service(
            axum::routing::any(|| async { ApiError::NoSuchRoute })
                .layer(axum::middleware::from_fn(crate::metrics::http::track)),
        )
        .with_state(state)
}

/// Serves `app` (the API's [`router`] with what the broker adds) on
/// `listener`, over TLS with `tls`, counting its connections, until
/// `shutdown` resolves, then lets the requests in flight finish. Each
/// request carries its peer's address (`ConnectInfo<authorize::Peer>`), the
/// host ACLs are matched against.
pub async fn serve(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    match tls {
        None => {
            axum::serve(
                crate::metrics::http::CountedListener(listener),
                app.into_make_service_with_connect_info::<authorize::Peer>(),
            )
            .with_graceful_shutdown(shutdown)
            .await
        }
        Some(acceptor) => {
            axum::serve(
                tls::TlsListener::new(listener, acceptor)?,
                app.into_make_service_with_connect_info::<authorize::Peer>(),
            )
            .with_graceful_shutdown(shutdown)
            .await
        }
    }
}
