//! `POST /api/v1/configure`: create a queue or replace all its options.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use storage::AclOperation;

use super::authorize::{self, Allowed};
use super::body::JsonBody;
use super::error::ApiError;
use super::lenient::{Loose, Object};
use super::options::OptionsBody;
use super::queues::options_json;
use super::reserved;
use super::AppState;

/// The configure body: the queue, and its options under `options` or, as
/// raw callers send them, at the top level.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ConfigureBody {
    queue: Loose<String>,
    options: Loose<Object<OptionsBody>>,
    /// The top-level keys read as options: all of them when `options` is
    /// absent, else only `namespace` and `task`, which override.
    #[serde(flatten)]
    top: OptionsBody,
}

/// Creates the queue (CREATE) or replaces every option (ALTER_CONFIGS;
/// an omitted one takes its default). The Kafka topic configs set on the queue are kept: HTTP
/// clients do not know them, and the answer echoes them as `topicConfigs`.
pub(super) async fn configure(
    State(state): State<AppState>,
    Allowed(access): Allowed,
    JsonBody(body): JsonBody<Loose<Object<ConfigureBody>>>,
) -> Result<Json<Value>, ApiError> {
    let Some(Object(body)) = body.valid() else {
        return Err(ApiError::NotAnObject);
    };
    let Some(queue) = body.queue.valid() else {
        return Err(ApiError::BadRequest("queue is required".into()));
    };
    reserved::refuse([queue.as_str()])?;
    let options = match body.options {
        Loose::Valid(Object(mut options)) => {
            if !body.top.namespace.is_none() {
                options.namespace = body.top.namespace;
            }
            if !body.top.task.is_none() {
                options.task = body.top.task;
            }
            options
        }
        Loose::Absent | Loose::Null => body.top,
        Loose::Invalid => return Err(ApiError::BadRequest("options must be an object".into())),
    };
    let options = options.into_options().map_err(ApiError::BadRequest)?;
    if !access.unrestricted() {
        // As Kafka: CreateTopics (on the cluster or the topic) for a new
        // queue, AlterConfigs for an existing one.
        if state.engine.queue(&queue).await?.is_some() {
            authorize::require_queue(&access, AclOperation::AlterConfigs, &queue)?;
        } else if !access.cluster(AclOperation::Create) {
            authorize::require_queue(&access, AclOperation::Create, &queue)?;
        }
    }
    let info = state
        .engine
        .configure_keeping_topic_configs(&queue, &options)
        .await?;
    Ok(Json(json!({
        "configured": true,
        "queueId": info.id.to_string(),
        "partitionId": Value::Null,
        "queue": info.name,
        "namespace": info.options.namespace,
        "task": info.options.task,
        "options": options_json(&info.options),
    })))
}
