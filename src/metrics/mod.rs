//! Prometheus metrics: `GET /metrics` in the text exposition format.
//!
//! Built on `prometheus-client` (the Prometheus project's Rust client)
//! rather than the `metrics` facade: an explicit registry instead of a
//! process-wide recorder, families that can be cleared for what is read
//! at scrape time (a deleted topic must disappear), collectors for what is
//! computed at scrape time, and the classic text format every scraper
//! reads. Its histogram takes a mutex per observation, so the crates use
//! `telemetry::Histogram` (atomics only) instead.
//!
//! Where the families live: `telemetry` (traffic per door), `storage`
//! (group commits, connection waits, retention), `facade` (Kafka requests
//! and groups), here [`http`] (HTTP requests, connections), `database`
//! (read at scrape time) and `process` (`/proc`). A scrape reads the
//! database and the Kafka groups, then encodes everything, one scrape at a
//! time.

mod database;
pub mod http;
mod process;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use storage::Engine;

use database::DatabaseFamilies;

/// How long a scrape waits for the database before answering without
/// fresh database figures (Prometheus' default scrape timeout is 10 s).
const DATABASE_TIMEOUT: Duration = Duration::from_secs(5);

/// The broker's registry and what a scrape refreshes.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    database: DatabaseFamilies,
    scrape_errors: Counter,
    engine: Engine,
    broker: Arc<facade::Broker>,
    per_partition: bool,
    /// One scrape at a time: a scrape clears and refills the database
    /// families, which another must not encode half-way.
    scraping: tokio::sync::Mutex<()>,
}

impl Metrics {
    /// Registers every family of the broker; with `per_partition`, topic
    /// and lag families get a `partition` label.
    pub fn new(engine: Engine, broker: Arc<facade::Broker>, per_partition: bool) -> Arc<Self> {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(process::ProcessCollector));
        let database = DatabaseFamilies::default();
        let scrape_errors = Counter::default();
        {
            let queen = registry.sub_registry_with_prefix("queen");
            telemetry::register(queen);
            storage::metrics::register(queen);
            facade::metrics::register(queen);
            http::register(queen);
            database.register(queen);
            queen.register(
                "metrics_scrape_errors",
                "Scrapes whose database figures could not be read (they are left out of that scrape)",
                scrape_errors.clone(),
            );
            let build = prometheus_client::metrics::family::Family::<
                Vec<(&'static str, &'static str)>,
                Gauge,
            >::default();
            build
                .get_or_create(&vec![("version", env!("CARGO_PKG_VERSION"))])
                .set(1);
            queen.register("build_info", "The broker's version, as a label", build);
        }
        Arc::new(Self {
            registry,
            database,
            scrape_errors,
            engine,
            broker,
            per_partition,
            scraping: tokio::sync::Mutex::new(()),
        })
    }

    /// Refreshes what is read at scrape time and encodes every family.
    pub async fn render(&self) -> Result<String, std::fmt::Error> {
        let _one_at_a_time = self.scraping.lock().await;
        facade::metrics::refresh(&self.broker);
        let refreshed = tokio::time::timeout(
            DATABASE_TIMEOUT,
            self.database.refresh(&self.engine, self.per_partition),
        )
        .await;
        let failure = match refreshed {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("no answer within {DATABASE_TIMEOUT:?}")),
        };
        if let Some(error) = failure {
            tracing::warn!(%error, "metrics: reading the database figures failed");
            self.database.forget();
            self.scrape_errors.inc();
        }
        let mut text = String::with_capacity(16 * 1024);
        prometheus_text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// `GET /metrics`.
pub fn router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(metrics)
}

async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.render().await {
        Ok(text) => (
            [(header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)],
            text,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "metrics: encoding failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
