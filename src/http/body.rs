//! Reading requests into typed structs: JSON bodies bounded in size, an
//! empty body read as `{}`, errors that name the field at fault; query
//! strings likewise, refused with the API's error body. A route with a
//! binary form (Section 4) takes its bytes instead when the Content-Type
//! names it.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::header;
use axum::http::request::Parts;
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::binary::PUSH_CONTENT_TYPE;
use super::error::ApiError;
use super::AppState;

/// A JSON body parsed into `T`.
#[derive(Debug)]
pub(super) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        parse_json(&read(req, state).await?).map(Self)
    }
}

/// A body that is either the binary form of Section 4
/// (`Content-Type: application/x-queen-push`), still to be decoded, or a
/// JSON body parsed into `T`.
#[derive(Debug)]
pub(super) enum BinaryOrJson<T> {
    /// The bytes of a binary body.
    Binary(Bytes),
    /// A JSON body.
    Json(T),
}

impl<T: DeserializeOwned> FromRequest<AppState> for BinaryOrJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let binary = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case(PUSH_CONTENT_TYPE));
        let bytes = read(req, state).await?;
        if binary {
            Ok(Self::Binary(bytes))
        } else {
            parse_json(&bytes).map(Self::Json)
        }
    }
}

/// The whole body, refused past the broker's size limit.
async fn read(req: Request, state: &AppState) -> Result<Bytes, ApiError> {
    let limit = state.max_body_bytes;
    axum::body::to_bytes(Body::new(req.into_body()), limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(limit))
}

/// A JSON body parsed into `T`; a body of whitespace only is `{}`.
pub(super) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Clients drop empty-object bodies, so no body at all means `{}`.
    let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
    // The bodies clients send read strictly, straight into `T`; any other
    // is read again the tolerant way, which also words the errors.
    if let Some(value) = super::lenient::strictly(|| serde_json::from_slice(text)) {
        return Ok(value);
    }
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
    Ok(value)
}

/// A query string parsed into `T`, whose fields are `Option<String>`: a
/// repeated key counts once, with its last value.
#[derive(Debug)]
pub(super) struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let bad = |e: &dyn std::fmt::Display| ApiError::BadRequest(format!("invalid query: {e}"));
        // Through a map first, so that a repeated key is its last value
        // rather than the "duplicate field" a struct would refuse.
        let Query(pairs) = Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map_err(|e| bad(&e.body_text()))?;
        let object: Map<String, Value> = pairs
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        serde_json::from_value(Value::Object(object))
            .map(Self)
            .map_err(|e| bad(&e))
    }
}
