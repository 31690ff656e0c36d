//! The optional binary forms of the native API (spec section 4): the
//! binary push and transaction bodies (`application/x-queen-push`) and the
//! framed pop answer (`frames=true`).
//!
//! Decoding only turns a body into the items the JSON routes build
//! ([`storage::PushItem`]); everything after that (dedup, ACLs, the
//! reserved-topic rule, the answer) is the JSON route's own path. Every
//! length, count and flag is checked before it is trusted, and a zstd frame
//! must declare its size, which is bounded before anything is inflated.

mod frames;
pub(super) mod pop;
pub(super) mod push;
mod reader;
mod zstd_frame;

/// The Content-Type of the binary push and transaction bodies.
pub(super) const PUSH_CONTENT_TYPE: &str = "application/x-queen-push";

/// Why a binary body was refused: every variant answers 400.
#[derive(Debug, thiserror::Error)]
pub(super) enum BinaryError {
    /// The body ended inside a field.
    #[error("binary body: truncated {0}")]
    Truncated(&'static str),
    /// Bytes follow the last field.
    #[error("binary body: {0} trailing bytes after {1}")]
    Trailing(usize, &'static str),
    /// The body does not start with the expected magic.
    #[error("binary body: it does not start with {0:?}")]
    Magic(&'static str),
    /// A flags byte holds a bit this form does not define.
    #[error("binary body: unknown flags {0:#04x}")]
    Flags(u8),
    /// A field's value is not allowed.
    #[error("binary body: {0}")]
    Invalid(String),
    /// A zstd frame is malformed, lacks its content size or inflates past
    /// the limit.
    #[error("binary body: zstd: {0}")]
    Zstd(String),
}

impl From<BinaryError> for super::error::ApiError {
    fn from(e: BinaryError) -> Self {
        Self::BadRequest(e.to_string())
    }
}
