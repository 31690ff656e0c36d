//! The HTTP API through its router, without sockets.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use queen::http::{router, AppState};
use serde_json::Value;
use storage::{Authorizer, AuthorizerConfig, Engine, SubscriptionMode};
use tower::ServiceExt;

use super::TestDb;

/// Calls the router of an engine on a test database.
pub(crate) struct Api {
    pub state: AppState,
}

impl Api {
    pub(crate) async fn new(db: &TestDb) -> Self {
        let engine = Engine::connect(&db.url).await.expect("engine");
        let authorizer = Authorizer::new(engine.clone(), AuthorizerConfig::default());
        Self {
            state: AppState {
                engine,
                max_body_bytes: 1024 * 1024,
                default_subscription: SubscriptionMode::All,
                authorizer: std::sync::Arc::new(authorizer),
            },
        }
    }

    /// Sends a request with a raw body; answers the status and the JSON
    /// body (`Null` when empty).
    pub(crate) async fn call(
        &self,
        method: &str,
        uri: &str,
        body: Option<Vec<u8>>,
    ) -> (StatusCode, Value) {
        let body = body.map_or_else(Body::empty, Body::from);
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .body(body)
            .expect("request");
        let response = router(self.state.clone())
            .oneshot(request)
            .await
            .expect("response");
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("JSON answer")
        };
        (status, value)
    }

    pub(crate) async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call("GET", uri, None).await
    }

    pub(crate) async fn post(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        self.call("POST", uri, Some(body.to_string().into_bytes()))
            .await
    }
}

/// Runs each `async fn name(api: &Api)` of the test crate once on SQLite
/// and once on PostgreSQL, each on a fresh database.
#[macro_export]
macro_rules! router_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = $crate::support::TestDb::sqlite();
                    $crate::$name(&$crate::support::router::Api::new(&db).await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let db = $crate::support::TestDb::postgres().await;
                    $crate::$name(&$crate::support::router::Api::new(&db).await).await;
                }
            )*
        }
    };
}
