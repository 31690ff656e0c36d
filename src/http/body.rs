//! Reading JSON request bodies: bounded in size, an empty body read as `{}`,
//! and errors that name the field at fault.

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use super::error::ApiError;
use super::AppState;

/// A JSON body parsed into `T`.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.max_body_bytes;
        let bytes = axum::body::to_bytes(Body::new(req.into_body()), limit)
            .await
            .map_err(|_| ApiError::PayloadTooLarge(limit))?;
        // Clients drop empty-object bodies, so no body at all means `{}`.
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        let mut de = serde_json::Deserializer::from_slice(text);
        let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_syntax() || inner.is_eof() {
                ApiError::BadRequest(format!("malformed JSON body: {inner}"))
            } else if path == "." {
                ApiError::BadRequest(format!("invalid body: {inner}"))
            } else {
                ApiError::BadRequest(format!("{path}: {inner}"))
            }
        })?;
        de.end()
            .map_err(|e| ApiError::BadRequest(format!("malformed JSON body: {e}")))?;
        Ok(Self(value))
    }
}
