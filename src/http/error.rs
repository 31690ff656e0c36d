//! How every HTTP error is answered: a status and `{"error", "code"}`
//! (the KV surface: `{"error", "reason", "detail"}`).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use storage::sealing::SealError;
use storage::{AclOperation, ResourceType, StorageError};

/// An error answered to an HTTP client. Storage failures are logged here and
/// answered without their internals.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed: 400 `bad_request`.
    #[error("{0}")]
    BadRequest(String),
    /// The body is JSON but not the object the route reads: 400 `bad_request`.
    #[error("the body must be a JSON object")]
    NotAnObject,
    /// The body is larger than the configured limit: 413 `payload_too_large`.
    #[error("request body exceeds the limit of {0} bytes")]
    PayloadTooLarge(usize),
    /// No route matches: 404 `no_such_route`.
    #[error("not found")]
    NoSuchRoute,
    /// The queue named in the path does not exist: 404 `queue_not_found`.
    #[error("Queue not found")]
    QueueNotFound,
    /// No message has that partition and transaction id: 404 `message_not_found`.
    #[error("Message not found")]
    MessageNotFound,
    /// An operation that answers `success` refused: the inner error with
    /// `"success": false` beside it.
    #[error(transparent)]
    Unsuccessful(Box<ApiError>),
    /// A pop refused: the inner error with `"success": false` and no
    /// `messages`, the shape a consumer reads.
    #[error(transparent)]
    PopRefused(Box<ApiError>),
    /// The engine refused or failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Authentication is on and the request did not pass it: 401
    /// `unauthorized` (the caller adds `WWW-Authenticate`).
    #[error("{0}")]
    Unauthorized(String),
    /// Authentication could not be checked (the user store failed): 503
    /// `unavailable`.
    #[error("{0}")]
    AuthUnavailable(String),
    /// The ACLs do not allow the caller `operation` on the resource: 403
    /// `forbidden`.
    #[error("not authorized to {} {} {name:?}", operation_name(*.operation), resource_name(*.resource_type))]
    Forbidden {
        /// What was refused.
        operation: AclOperation,
        /// The kind of resource.
        resource_type: ResourceType,
        /// The resource's name.
        name: String,
    },
}

/// Kafka's name of an ACL operation.
fn operation_name(operation: AclOperation) -> &'static str {
    match operation {
        AclOperation::All => "ALL",
        AclOperation::Read => "READ",
        AclOperation::Write => "WRITE",
        AclOperation::Create => "CREATE",
        AclOperation::Delete => "DELETE",
        AclOperation::Alter => "ALTER",
        AclOperation::Describe => "DESCRIBE",
        AclOperation::ClusterAction => "CLUSTER_ACTION",
        AclOperation::DescribeConfigs => "DESCRIBE_CONFIGS",
        AclOperation::AlterConfigs => "ALTER_CONFIGS",
        AclOperation::IdempotentWrite => "IDEMPOTENT_WRITE",
    }
}

/// Kafka's name of a resource type (a queue is a `TOPIC`).
fn resource_name(resource_type: ResourceType) -> &'static str {
    match resource_type {
        ResourceType::Topic => "TOPIC",
        ResourceType::Group => "GROUP",
        ResourceType::Cluster => "CLUSTER",
        ResourceType::TransactionalId => "TRANSACTIONAL_ID",
    }
}

impl ApiError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Self::BadRequest(_) | Self::NotAnObject => (StatusCode::BAD_REQUEST, "bad_request"),
            Self::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            Self::NoSuchRoute => (StatusCode::NOT_FOUND, "no_such_route"),
            Self::QueueNotFound => (StatusCode::NOT_FOUND, "queue_not_found"),
            Self::MessageNotFound => (StatusCode::NOT_FOUND, "message_not_found"),
            Self::Unsuccessful(inner) | Self::PopRefused(inner) => inner.status_and_code(),
            Self::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Self::AuthUnavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Self::Forbidden { .. } => (StatusCode::FORBIDDEN, "forbidden"),
            Self::Storage(e) => match e {
                StorageError::InvalidInput(_) => (StatusCode::BAD_REQUEST, "bad_request"),
                StorageError::KvBadRequest { .. } => (StatusCode::BAD_REQUEST, "kv_bad_request"),
                StorageError::KvValueTooLarge { .. } => {
                    (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
                }
                StorageError::NameTooLong { .. } => {
                    (StatusCode::PAYLOAD_TOO_LARGE, "name_too_long")
                }
                StorageError::QueueNotFound(_) => (StatusCode::NOT_FOUND, "queue_not_found"),
                StorageError::PartitionNotFound(_) => {
                    (StatusCode::NOT_FOUND, "partition_not_found")
                }
                StorageError::Producer(_) | StorageError::Transaction(_) => {
                    (StatusCode::CONFLICT, "producer_refused")
                }
                StorageError::Mirrored(_) => (StatusCode::CONFLICT, "topic_mirrored"),
                StorageError::Reserved(_) => (StatusCode::BAD_REQUEST, "reserved_topic"),
                StorageError::OffsetOutOfRange { .. } => {
                    (StatusCode::BAD_REQUEST, "offset_out_of_range")
                }
                StorageError::CommitFailed | StorageError::ShuttingDown => {
                    (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
                }
                // The operator must give the broker its key: say so.
                StorageError::Sealed(SealError::NoKey | SealError::WrongKey { .. }) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "encryption_key_unavailable",
                ),
                StorageError::Sealed(_)
                | StorageError::Corrupt(_)
                | StorageError::Database(_)
                | StorageError::Migrate(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let message = if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %self, "request failed");
            "internal error".to_owned()
        } else {
            self.to_string()
        };
        // The KV surface answers its own envelope (1.3): the stable code in
        // `error`, a stable `reason`, and the text in `detail`.
        let body = match &self {
            Self::Storage(StorageError::KvBadRequest { reason, detail }) => {
                json!({ "error": code, "reason": reason, "detail": detail })
            }
            Self::Storage(e @ StorageError::KvValueTooLarge { .. }) => {
                json!({ "error": code, "reason": "kv_value_too_large", "detail": e.to_string() })
            }
            Self::Unsuccessful(_) => {
                json!({ "success": false, "error": message, "code": code })
            }
            Self::Forbidden {
                operation,
                resource_type,
                name,
            } => json!({
                "error": code,
                "code": code,
                "message": message,
                "operation": operation_name(*operation),
                "resourceType": resource_name(*resource_type),
                "resourceName": name,
            }),
            Self::PopRefused(_) => {
                json!({ "success": false, "error": message, "code": code, "messages": [] })
            }
            _ => json!({ "error": message, "code": code }),
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}
