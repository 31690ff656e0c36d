//! The HTTP front door's metrics: requests and latency per route template
//! and status, a debug span per request, and open connections.

use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use telemetry::{buckets, ConnectionGuard, Door, Histogram};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tracing::Instrument;

/// The route of a request that matched none.
const UNMATCHED: &str = "unmatched";

/// The labels of the per-request families: the route template (never the
/// raw path, whose queue names and ids would make the series unbounded).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
    status: String,
}

/// The HTTP families of this process.
#[derive(Debug)]
struct HttpMetrics {
    requests: Family<RouteLabels, Counter>,
    seconds: Family<RouteLabels, Histogram, fn() -> Histogram>,
}

static HTTP: LazyLock<HttpMetrics> = LazyLock::new(|| HttpMetrics {
    requests: Family::default(),
    seconds: Family::new_with_constructor(|| Histogram::new(buckets::SECONDS)),
});

/// Registers the HTTP families into `registry` (prefixed `queen`).
pub(super) fn register(registry: &mut Registry) {
    registry.register(
        "http_requests",
        "HTTP requests answered, per method, route template and status",
        HTTP.requests.clone(),
    );
    registry.register(
        "http_request_duration_seconds",
        "HTTP request latency, per method, route template and status (a waiting pop includes its wait)",
        HTTP.seconds.clone(),
    );
}

/// Counts and times a request, and logs it in a debug span. Routes are
/// resolved by label lookup (a read lock on the family's map and the
/// label strings), which is small next to parsing a JSON body; the Kafka
/// door, which carries the produce rate, resolves its handles at start-up.
pub async fn track(matched: Option<MatchedPath>, request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let route = matched.as_ref().map_or(UNMATCHED, MatchedPath::as_str);
    let span = tracing::debug_span!(
        "http_request",
        %method,
        route,
        user_agent = request
            .headers()
            .get(axum::http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(""),
    );
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    let labels = RouteLabels {
        method: method.to_string(),
        route: route.to_owned(),
        status: status.as_str().to_owned(),
    };
    HTTP.requests.get_or_create(&labels).inc();
    HTTP.seconds.get_or_create(&labels).observe_since(start);
    tracing::debug!(
        parent: &span,
        status = status.as_u16(),
        duration_ms = start.elapsed().as_secs_f64() * 1e3,
        "http request answered"
    );
    response
}

/// The HTTP listener, counting its open connections.
#[derive(Debug)]
pub struct CountedListener(pub TcpListener);

impl axum::serve::Listener for CountedListener {
    type Io = Counted;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.0).await;
        (
            Counted {
                stream,
                _open: ConnectionGuard::open(Door::Http),
            },
            addr,
        )
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// A connection of the HTTP listener, counted open until dropped.
#[derive(Debug)]
pub struct Counted {
    stream: TcpStream,
    _open: ConnectionGuard,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
