//! One Kafka client connection: length-prefixed request frames in, response
//! frames out, in order. Like Kafka, a connection's requests are handled one
//! at a time, so answers keep the order of pipelined requests.

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::broker::Broker;
use crate::handlers;

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

/// Serves one connection until the peer closes it or sends what cannot be served.
pub async fn handle(socket: TcpStream, broker: &Broker) -> Result<(), ConnError> {
    let _ = socket.set_nodelay(true);
    let (read, mut write) = socket.into_split();
    let mut read = BufReader::with_capacity(64 * 1024, read);
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
        let mut frame = vec![0u8; size];
        read.read_exact(&mut frame).await?;
        match handlers::dispatch(broker, Bytes::from(frame)).await {
            Ok(Some(response)) => write.write_all(&response).await?,
            Ok(None) => {} // acks=0: no answer
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
