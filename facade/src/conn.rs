//! One Kafka client connection: length-prefixed request frames in, response
//! frames out, in request order.

use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use crate::broker::Broker;
use crate::handlers::{self, Reply};

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
    /// A response could not be encoded: a bug, logged loudly.
    #[error("cannot encode the response: {0}")]
    Encode(String),
}

/// Requests read ahead of their answers on one connection.
const IN_FLIGHT: usize = 16;

/// Serves one connection until the peer closes it or sends what cannot be
/// served. A reader decodes requests and starts them in order (a produce
/// queues its appends before the next request is read); a writer sends the
/// answers in the same order as they complete, so pipelined produces share
/// group commits without being reordered.
pub async fn handle(socket: TcpStream, broker: Arc<Broker>) -> Result<(), ConnError> {
    let _ = socket.set_nodelay(true);
    let peer = socket
        .peer_addr()
        .map(|a| format!("/{}", a.ip()))
        .unwrap_or_default();
    let (read, mut write) = socket.into_split();
    let (replies, mut queue) = mpsc::channel::<(Reply, OwnedSemaphorePermit)>(IN_FLIGHT);
    let writer = tokio::spawn(async move {
        while let Some((reply, budget)) = queue.recv().await {
            let frame = match reply {
                Reply::Ready(frame) => frame,
                Reply::Later(pending) => pending.await?,
            };
            if let Some(frame) = frame {
                write.write_all(&frame).await?;
            }
            drop(budget);
        }
        Ok::<(), ConnError>(())
    });
    let read_result = read_requests(
        BufReader::with_capacity(64 * 1024, read),
        &broker,
        &peer,
        replies,
    )
    .await;
    // Answers to the requests read so far still go out before closing.
    let write_result = writer
        .await
        .map_err(|e| ConnError::Encode(format!("connection writer: {e}")))?;
    read_result.and(write_result)
}

async fn read_requests(
    mut read: BufReader<OwnedReadHalf>,
    broker: &Arc<Broker>,
    peer: &str,
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
        let max = broker.config.max_request_bytes;
        let Some(size) = usize::try_from(len).ok().filter(|n| (8..=max).contains(n)) else {
            tracing::warn!(length = len, "kafka: refusing a request frame");
            return Err(ConnError::BadLength(i64::from(len), max));
        };
        // Requests in flight across all connections hold memory from one
        // budget, released once answered: a burst waits instead of growing.
        let budget = broker.request_budget(size).await;
        let mut frame = vec![0u8; size];
        read.read_exact(&mut frame).await?;
        match handlers::dispatch(broker, peer, Bytes::from(frame)).await {
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
