//! One Kafka client connection: TLS when its listener says so, then
//! length-prefixed request frames in, response frames out, in request
//! order, each frame first shown to the connection's authentication
//! [`Session`] (which serves nothing else until SASL succeeds).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use crate::auth::session::{Session, Verdict};
use crate::auth::Principal;
use crate::broker::Broker;
use crate::handlers::{self, Reply};
use crate::listener::Listener;

/// Why a connection was closed.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    /// The socket failed or the peer went away mid-frame.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The length prefix is negative or beyond the configured maximum.
    #[error("request frame of {0} bytes is outside 8..={1}")]
    BadLength(i64, usize),
    /// The frame could not be decoded as the request it claims to be.
    #[error("malformed request: {0}")]
    Malformed(String),
    /// The request names an API key Kafka does not define.
    #[error("unknown API key {0}")]
    UnknownApi(i16),
    /// The request is a version of an API this broker does not implement.
    #[error("{api} version {version} is not supported")]
    UnsupportedVersion {
        /// The API's name.
        api: String,
        /// The version asked for.
        version: i16,
    },
    /// The TLS handshake failed or took too long.
    #[error("TLS handshake: {0}")]
    Tls(String),
    /// Authentication failed, or a request came before it succeeded.
    #[error("authentication: {0}")]
    Auth(String),
    /// A response could not be encoded: a bug, logged loudly.
    #[error("cannot encode the response: {0}")]
    Encode(String),
}

/// Requests read ahead of their answers on one connection: enough for a
/// producer that sends a record per request (`linger.ms=0`) to keep
/// thousands of requests a second moving while another client's load makes
/// each commit take tens of milliseconds. At most this many of them share a
/// group commit, so with 16, then 64, such a stream fell behind for good
/// (README, *Latency, alone and under load*). What they hold counts against
/// the in-flight budget, not against the connection.
const IN_FLIGHT: usize = 1024;

/// What a request holds while in flight, per byte of its frame: the frame,
/// and for a produce its decoded records and their stored encoding until
/// they commit (about 3.5 times the frame when measured, issue 22).
const HELD_PER_FRAME_BYTE: usize = 3;

/// The read buffer of a connection. Small frames (most requests) are read
/// out of it several at a time; a larger frame is read straight into its
/// own buffer, so the size costs no throughput. It is allocated (and
/// resident) for as long as the connection lives, busy or idle: 64 KiB
/// made an idle connection cost over 64 KiB (issue 22).
const READ_BUFFER: usize = 8 * 1024;

/// How long a client may take to finish the TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves one accepted connection on `listener`: the TLS handshake first
/// when the listener has TLS (a verified client certificate's subject is
/// the principal), then the Kafka requests.
pub async fn accept(
    socket: TcpStream,
    peer: SocketAddr,
    listener: Arc<Listener>,
    broker: Arc<Broker>,
) -> Result<(), ConnError> {
    let _ = socket.set_nodelay(true);
    let Some(acceptor) = listener.tls.clone() else {
        let (read, write) = socket.into_split();
        return handle(read, write, peer, listener, None, broker).await;
    };
    let tls = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(socket))
        .await
        .map_err(|_| ConnError::Tls("timed out".into()))?
        .map_err(|e| ConnError::Tls(e.to_string()))?;
    let principal = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| crate::tls::certificate_principal(leaf));
    let (read, write) = tokio::io::split(tls);
    handle(read, write, peer, listener, principal, broker).await
}

/// Serves one connection until the peer closes it or sends what cannot be
/// served. A reader decodes requests and starts them in order (a produce
/// queues its appends before the next request is read); a writer sends the
/// answers in the same order as they complete, so pipelined produces share
/// group commits without being reordered.
pub async fn handle<R, W>(
    read: R,
    mut write: W,
    peer: SocketAddr,
    listener: Arc<Listener>,
    tls_principal: Option<Principal>,
    broker: Arc<Broker>,
) -> Result<(), ConnError>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let peer = format!("/{}", peer.ip());
    let (replies, mut queue) = mpsc::channel::<(Reply, OwnedSemaphorePermit)>(IN_FLIGHT);
    let writer = tokio::spawn(async move {
        while let Some((reply, budget)) = queue.recv().await {
            // A held answer comes as chunks of one frame (a fetch's records
            // are not copied into it); an empty Vec does not allocate.
            let (frame, chunks, held) = match reply {
                Reply::Ready(frame) => (frame, Vec::new(), None),
                Reply::Held(chunks, held) => (None, chunks, Some(held)),
                Reply::Later(pending) => (pending.await?, Vec::new(), None),
            };
            if let Some(frame) = frame {
                write.write_all(&frame).await?;
            }
            for chunk in chunks {
                write.write_all(&chunk).await?;
            }
            drop(held);
            drop(budget);
        }
        // TLS sends its close_notify; a plain socket half-closes.
        write.shutdown().await?;
        Ok::<(), ConnError>(())
    });
    let mut session = Session::new(listener.protocol, tls_principal);
    let read_result = read_requests(
        BufReader::with_capacity(READ_BUFFER, read),
        &broker,
        &peer,
        &listener,
        &mut session,
        replies,
    )
    .await;
    tracing::debug!(%peer, principal = ?session.principal(), "kafka: connection done");
    // Answers to the requests read so far still go out before closing.
    let write_result = writer
        .await
        .map_err(|e| ConnError::Encode(format!("connection writer: {e}")))?;
    read_result.and(write_result)
}

async fn read_requests<R: AsyncRead + Unpin>(
    mut read: BufReader<R>,
    broker: &Arc<Broker>,
    peer: &str,
    listener: &Listener,
    session: &mut Session,
    replies: mpsc::Sender<(Reply, OwnedSemaphorePermit)>,
) -> Result<(), ConnError> {
    loop {
        let mut len = [0u8; 4];
        match read.read_exact(&mut len).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        let len = i32::from_be_bytes(len);
        let (min, max) = session.frame_bounds(broker.config.max_request_bytes);
        let Some(size) = usize::try_from(len)
            .ok()
            .filter(|n| (min..=max).contains(n))
        else {
            tracing::warn!(length = len, "kafka: refusing a request frame");
            return Err(ConnError::BadLength(i64::from(len), max));
        };
        // Requests in flight across all connections hold memory from one
        // budget, released once answered: a burst waits instead of growing.
        let budget = broker
            .request_budget(size.saturating_mul(HELD_PER_FRAME_BYTE))
            .await;
        let mut frame = vec![0u8; size];
        read.read_exact(&mut frame).await?;
        let frame = Bytes::from(frame);
        let dispatched = match session.on_frame(broker, &frame).await {
            Verdict::Serve => {
                // Served only once authenticated, but for ApiVersions.
                let principal = session.principal().map_or("User:ANONYMOUS", |p| p.as_str());
                handlers::dispatch(broker, peer, &listener.name, principal, frame).await
            }
            Verdict::Answer(answer) => Ok(Reply::Ready(Some(answer))),
            Verdict::AnswerAndClose(answer, why) => {
                tracing::info!(%peer, listener = %listener.name, reason = %why, "kafka: authentication failed");
                // The answer goes out (the writer drains) before closing.
                let _ = replies.send((Reply::Ready(Some(answer)), budget)).await;
                return Err(ConnError::Auth(why));
            }
            Verdict::Close(why) => {
                tracing::info!(%peer, listener = %listener.name, reason = %why, "kafka: closing an unauthenticated connection");
                return Err(ConnError::Auth(why));
            }
        };
        match dispatched {
            Ok(reply) => {
                if replies.send((reply, budget)).await.is_err() {
                    return Ok(()); // the writer stopped: the peer is gone
                }
            }
            Err(e) => {
                match &e {
                    ConnError::Encode(_) => {
                        tracing::error!(error = %e, "kafka: closing connection")
                    }
                    _ => tracing::warn!(error = %e, "kafka: closing connection"),
                }
                return Err(e);
            }
        }
    }
}
