//! One Kafka client connection: length-prefixed request frames in, response
//! frames out.

use storage::Engine;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::FacadeConfig;

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    /// The socket failed or the peer went away mid-frame.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The length prefix is negative or beyond the configured maximum.
    #[error("request frame of {0} bytes is outside 8..={1}")]
    BadLength(i64, usize),
    /// The request names an API this broker does not implement.
    #[error("unsupported Kafka API key {api_key} version {api_version}")]
    Unsupported {
        /// The request's API key.
        api_key: i16,
        /// The request's API version.
        api_version: i16,
    },
}

/// Reads the connection's first request frame, logs it and closes: no Kafka
/// API is served yet.
pub async fn handle(
    mut socket: TcpStream,
    _engine: &Engine,
    config: &FacadeConfig,
) -> Result<(), ConnError> {
    let mut len = [0u8; 4];
    match socket.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    let len = i32::from_be_bytes(len);
    let size = usize::try_from(len)
        .ok()
        .filter(|n| (8..=config.max_request_bytes).contains(n));
    let Some(size) = size else {
        tracing::warn!(length = len, "kafka: refusing request frame");
        return Err(ConnError::BadLength(
            i64::from(len),
            config.max_request_bytes,
        ));
    };
    let mut frame = vec![0u8; size];
    socket.read_exact(&mut frame).await?;
    let api_key = i16::from_be_bytes([frame[0], frame[1]]);
    let api_version = i16::from_be_bytes([frame[2], frame[3]]);
    tracing::info!(
        api_key,
        api_version,
        "kafka: API not implemented; closing the connection"
    );
    Err(ConnError::Unsupported {
        api_key,
        api_version,
    })
}
