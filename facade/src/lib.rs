//! The Kafka wire-protocol front door of the queen broker.
//!
//! `conn` reads length-prefixed frames from each connection, bounded by the
//! configured maximum request size. The Kafka APIs themselves are not
//! implemented yet: every request is logged and its connection closed, which
//! Kafka clients treat as a broker that cannot serve them.

mod conn;

use std::future::Future;

use storage::Engine;
use tokio::net::TcpListener;

/// Settings of the Kafka listener.
#[derive(Debug, Clone)]
pub struct FacadeConfig {
    /// The largest request frame accepted, in bytes; a larger length prefix
    /// closes the connection before anything is allocated.
    pub max_request_bytes: usize,
}

/// Accepts Kafka connections on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    engine: Engine,
    config: FacadeConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "kafka listener: accept failed");
                        continue;
                    }
                };
                let config = config.clone();
                let engine = engine.clone();
                tokio::spawn(async move {
                    if let Err(e) = conn::handle(socket, &engine, &config).await {
                        tracing::debug!(%peer, error = %e, "kafka connection closed");
                    }
                });
            }
        }
    }
}
