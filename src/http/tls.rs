//! HTTPS: a listener whose connections are TLS streams, for `axum::serve`.
//!
//! Handshakes run in tasks of their own, not in `accept`: axum accepts one
//! connection at a time, so a client that stalls its handshake would
//! otherwise hold up every other one. Each handshake has
//! [`HANDSHAKE_TIMEOUT`]; connections are counted from the TCP accept, as
//! plain HTTP's are.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::metrics::http::{Counted, CountedListener};

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshaken connections waiting for axum to take them.
const READY_BACKLOG: usize = 64;

/// A TCP listener that hands out connections once their TLS handshake is
/// done; failed handshakes are logged and dropped.
#[derive(Debug)]
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<Counted>, SocketAddr)>,
    local: SocketAddr,
    acceptor: JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `listener` and handshakes with `acceptor`'s settings.
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(READY_BACKLOG);
        let acceptor = tokio::spawn(accept_loop(CountedListener(listener), acceptor, tx));
        Ok(Self {
            ready,
            local,
            acceptor,
        })
    }
}

async fn accept_loop(
    mut listener: CountedListener,
    acceptor: TlsAcceptor,
    ready: mpsc::Sender<(TlsStream<Counted>, SocketAddr)>,
) {
    while !ready.is_closed() {
        // Never fails: axum's TCP accept waits out errors such as EMFILE.
        let (stream, peer) = axum::serve::Listener::accept(&mut listener).await;
        let acceptor = acceptor.clone();
        let ready = ready.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    // Closed: the server is shutting down; the connection goes.
                    let _ = ready.send((tls, peer)).await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "http: TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "http: TLS handshake timed out"),
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<Counted>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept task ended (it only does once this listener is
            // gone); nothing will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}
