//! Authentication of the HTTP API: who a request comes from.
//!
//! With `--http-auth` every request but `/health` must carry
//! `Authorization: Bearer <JWT>` ([`jwt`]) or `Authorization: Basic`
//! ([`basic`], the users of the Kafka door), as enabled; anything else is
//! answered 401 with `WWW-Authenticate` before a handler runs, so a
//! refused request reads and writes nothing. An accepted one carries a
//! [`Caller`] in its extensions: pushes stamp its subject as
//! `producerSub`, and authorization (ACLs on queues and groups) reads its
//! principal there, in the handler that knows the queue and the group.
//! Without `--http-auth` no request has a `Caller` and every one is served.

mod basic;
mod jwt;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use facade::auth::Principal;
use facade::SaslConfig;
use storage::Engine;

pub use jwt::{JwtKeyError, JwtSettings, JwtVerifier};

use super::error::ApiError;

/// Paths served without authentication: load balancers and orchestrators
/// probe `/health` without credentials. `/metrics` is not among them: it
/// names every queue, topic and group, and Prometheus scrapes with a
/// bearer token or Basic credentials as easily as without.
const OPEN_PATHS: [&str; 1] = ["/health"];

/// Who made a request, as authentication established it; in the request's
/// extensions when `--http-auth` is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `User:<subject>`, as the Kafka door writes principals.
    pub principal: Principal,
    /// The JWT `sub` or the Basic user name: stamped on pushed messages
    /// as `producerSub`.
    pub subject: String,
}

impl Caller {
    fn new(subject: String) -> Self {
        Self {
            principal: Principal::user(&subject),
            subject,
        }
    }
}

/// The `producerSub` of messages pushed by the request's caller: its
/// subject when authentication is on, else none (a `producerSub` in a
/// request body is never read).
pub(super) fn producer_sub(caller: &Option<Extension<Caller>>) -> Option<String> {
    caller.as_ref().map(|Extension(c)| c.subject.clone())
}

/// How the HTTP API authenticates: the methods enabled.
#[derive(Debug, Clone)]
pub struct HttpAuth {
    jwt: Option<Arc<JwtVerifier>>,
    /// Basic: the user store and the decoy salts of unknown users.
    basic: Option<(Engine, SaslConfig)>,
}

impl HttpAuth {
    /// Bearer tokens checked by `jwt` and/or Basic credentials checked
    /// against `engine`'s users; `None` if neither is enabled.
    pub fn new(jwt: Option<JwtVerifier>, basic: Option<(Engine, SaslConfig)>) -> Option<Self> {
        if jwt.is_none() && basic.is_none() {
            return None;
        }
        Some(Self {
            jwt: jwt.map(Arc::new),
            basic,
        })
    }

    /// Who `headers` authenticate as, or why they do not.
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(Refusal::new("authentication required", false));
        };
        let value = value
            .to_str()
            .map_err(|_| Refusal::new("malformed Authorization header", false))?;
        let (scheme, parameter) = value.trim().split_once(' ').unwrap_or((value, ""));
        if scheme.eq_ignore_ascii_case("bearer") {
            let Some(jwt) = &self.jwt else {
                return Err(Refusal::new("bearer tokens are not accepted here", false));
            };
            return jwt
                .subject(parameter.trim())
                .map(Caller::new)
                .map_err(|why| Refusal::new(format!("invalid bearer token: {why}"), true));
        }
        if scheme.eq_ignore_ascii_case("basic") {
            let Some((engine, sasl)) = &self.basic else {
                return Err(Refusal::new(
                    "Basic credentials are not accepted here",
                    false,
                ));
            };
            let credentials = basic::parse(parameter).map_err(|why| Refusal::new(why, false))?;
            let matches = facade::auth::password::password_matches(
                engine,
                sasl,
                &credentials.user,
                &credentials.password,
            )
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "http: cannot check a Basic password");
                Refusal::Unavailable
            })?;
            if !matches {
                return Err(Refusal::new("invalid user name or password", false));
            }
            return Ok(Caller::new(credentials.user));
        }
        Err(Refusal::new(
            "unsupported authorization scheme (use Bearer or Basic)",
            false,
        ))
    }

    /// The challenges of a 401: one per enabled method (RFC 9110 11.6.1).
    fn challenges(&self, bad_token: bool) -> Vec<HeaderValue> {
        let mut out = Vec::new();
        if self.jwt.is_some() {
            out.push(HeaderValue::from_static(if bad_token {
                r#"Bearer realm="queen", error="invalid_token""#
            } else {
                r#"Bearer realm="queen""#
            }));
        }
        if self.basic.is_some() {
            out.push(HeaderValue::from_static(
                r#"Basic realm="queen", charset="UTF-8""#,
            ));
        }
        out
    }
}

/// Why a request was not authenticated.
enum Refusal {
    /// 401: the message, and whether a bearer token was given and refused.
    Unauthenticated(String, bool),
    /// The user store could not be read: 503, try again.
    Unavailable,
}

impl Refusal {
    fn new(why: impl Into<String>, bad_token: bool) -> Self {
        Self::Unauthenticated(why.into(), bad_token)
    }
}

/// Serves the request if it authenticates (or its path is open), with its
/// [`Caller`] in the extensions; otherwise answers the refusal.
async fn authenticate(
    State(auth): State<Arc<HttpAuth>>,
    mut request: Request,
    next: Next,
) -> Response {
    if OPEN_PATHS.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    match auth.authenticate(request.headers()).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(Refusal::Unavailable) => {
            ApiError::AuthUnavailable("the user store is unavailable".into()).into_response()
        }
        Err(Refusal::Unauthenticated(why, bad_token)) => {
            let mut response = ApiError::Unauthorized(why).into_response();
            for challenge in auth.challenges(bad_token) {
                response
                    .headers_mut()
                    .append(header::WWW_AUTHENTICATE, challenge);
            }
            response
        }
    }
}

/// `app` with every request authenticated by `auth` (but those of
/// [`OPEN_PATHS`]); `app` unchanged without it.
pub fn protect(app: Router, auth: Option<HttpAuth>) -> Router {
    match auth {
        Some(auth) => app.layer(axum::middleware::from_fn_with_state(
            Arc::new(auth),
            authenticate,
        )),
        None => app,
    }
}
