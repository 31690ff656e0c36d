//! One connection's authentication: the SASL exchange (SaslHandshake v0 or
//! v1, then SaslAuthenticate frames, or raw length-prefixed tokens after a
//! v0 handshake, as Kafka accepts), the principal it established, and the
//! gate: on a SASL listener nothing but ApiVersions, SaslHandshake and
//! SaslAuthenticate is served before authentication succeeds (or once the
//! session has expired and the client has not re-authenticated).
//!
//! Re-authentication (KIP-368) is offered when sessions have a lifetime:
//! SaslAuthenticate v1+ tells the client `session_lifetime_ms`; before it
//! runs out the client sends SaslHandshake v1 and SaslAuthenticate again on
//! the same connection, with the same mechanism and the same principal.
//! A request other than those after expiry closes the connection, as Kafka
//! does. With no lifetime (the default) a handshake on an authenticated
//! connection is answered `ILLEGAL_SASL_STATE`, which is Kafka's answer too.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestKind, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::ScramMechanism;

use super::scram::{parse_client_first, Exchange};
use super::{password, plain, Mechanism, Principal, SaslConfig};
use crate::broker::Broker;
use crate::handlers::{parse, respond};
use crate::listener::SecurityProtocol;

/// The largest frame read before a SASL connection has authenticated
/// (Kafka's `sasl.server.max.receive.size`): an anonymous peer cannot make
/// the broker buffer a 100 MB request.
pub(crate) const MAX_UNAUTHENTICATED_FRAME: usize = 512 * 1024;

/// What the connection does with a frame.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Not an authentication matter, and allowed: dispatch it.
    Serve,
    /// Answered here.
    Answer(BytesMut),
    /// Answered here, and then the connection closes (for the reason given).
    AnswerAndClose(BytesMut, String),
    /// Refused unanswered: the connection closes having served nothing.
    Close(String),
}

enum Step {
    /// No exchange under way.
    Idle,
    /// SaslHandshake chose the mechanism; its first token is next. `raw`:
    /// the handshake was v0, so tokens come without Kafka headers.
    Chosen { mechanism: Mechanism, raw: bool },
    /// SCRAM's server-first-message was sent; the client's final is next.
    Scram {
        exchange: Box<Exchange>,
        mechanism: ScramMechanism,
        raw: bool,
    },
}

/// A failed exchange: why, for the client and the log.
struct Refusal(String);

impl<E: std::fmt::Display> From<E> for Refusal {
    fn from(e: E) -> Self {
        Self(e.to_string())
    }
}

enum Progress {
    /// The exchange goes on; send this token.
    Continue(Vec<u8>),
    /// Authenticated; send this final token.
    Done(Vec<u8>),
}

/// The authentication state of one connection.
pub(crate) struct Session {
    protocol: SecurityProtocol,
    principal: Option<Principal>,
    /// The mechanism the principal authenticated with (re-authentication
    /// must use it again).
    mechanism: Option<Mechanism>,
    /// When the authentication stops being valid (KIP-368).
    expires: Option<Instant>,
    step: Step,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("protocol", &self.protocol)
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A new connection on a `protocol` listener; `tls_principal` is its
    /// verified client certificate's subject, if any.
    pub(crate) fn new(protocol: SecurityProtocol, tls_principal: Option<Principal>) -> Self {
        let principal = if protocol.is_sasl() {
            None
        } else {
            Some(tls_principal.unwrap_or_else(Principal::anonymous))
        };
        Self {
            protocol,
            principal,
            mechanism: None,
            expires: None,
            step: Step::Idle,
        }
    }

    /// Who the connection is, once known.
    pub(crate) fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// Whether requests other than authentication are served now.
    fn open(&self) -> bool {
        self.principal.is_some() && self.expires.is_none_or(|at| Instant::now() < at)
    }

    /// Whether the next frame is a raw SASL token (after a v0 handshake).
    fn raw_pending(&self) -> bool {
        matches!(
            self.step,
            Step::Chosen { raw: true, .. } | Step::Scram { raw: true, .. }
        )
    }

    /// The sizes a next frame may have: raw tokens can be a few bytes; an
    /// unauthenticated peer gets a small maximum.
    pub(crate) fn frame_bounds(&self, configured_max: usize) -> (usize, usize) {
        if self.raw_pending() {
            (0, MAX_UNAUTHENTICATED_FRAME)
        } else if self.open() {
            (8, configured_max)
        } else {
            (8, MAX_UNAUTHENTICATED_FRAME.min(configured_max))
        }
    }

    /// Decides what happens to `frame` (without its length prefix).
    pub(crate) async fn on_frame(&mut self, broker: &Broker, frame: &Bytes) -> Verdict {
        if self.raw_pending() {
            return match self.token(broker, frame).await {
                Ok(Progress::Continue(token) | Progress::Done(token)) => {
                    let mut out = BytesMut::with_capacity(4 + token.len());
                    out.put_u32(token.len() as u32);
                    out.put_slice(&token);
                    Verdict::Answer(out)
                }
                // Kafka closes a raw-token connection on failure: there is
                // no frame to carry an error in.
                Err(Refusal(why)) => Verdict::Close(why),
            };
        }
        let api = frame
            .get(..2)
            .and_then(|k| ApiKey::try_from(i16::from_be_bytes([k[0], k[1]])).ok());
        match api {
            Some(ApiKey::SaslHandshake | ApiKey::SaslAuthenticate) => {
                self.sasl_request(broker, frame.clone()).await
            }
            _ if self.open() => Verdict::Serve,
            Some(ApiKey::ApiVersions) if matches!(self.step, Step::Idle) => Verdict::Serve,
            Some(api) if self.principal.is_some() => {
                Verdict::Close(format!("{api:?} after the session expired"))
            }
            Some(api) => Verdict::Close(format!("{api:?} before authentication")),
            None => Verdict::Close("an unknown request before authentication".into()),
        }
    }

    async fn sasl_request(&mut self, broker: &Broker, frame: Bytes) -> Verdict {
        let parsed = match parse(frame) {
            Ok(p) => p,
            Err(e) => return Verdict::Close(e.to_string()),
        };
        let (version, correlation_id) = (parsed.version, parsed.correlation_id);
        let (api, answer, close) = match parsed.body {
            Some(RequestKind::SaslHandshake(request)) => {
                let (answer, close) = self.handshake(broker, version, request);
                let api = ApiKey::SaslHandshake;
                (api, respond(api, version, correlation_id, &answer), close)
            }
            Some(RequestKind::SaslAuthenticate(request)) => {
                let (answer, close) = self.authenticate(broker, version, request).await;
                let api = ApiKey::SaslAuthenticate;
                (api, respond(api, version, correlation_id, &answer), close)
            }
            _ => return Verdict::Close("an authentication request without a body".into()),
        };
        match (answer, close) {
            (Ok(frame), None) => Verdict::Answer(frame),
            (Ok(frame), Some(why)) => Verdict::AnswerAndClose(frame, why),
            (Err(e), _) => Verdict::Close(format!("{api:?}: {e}")),
        }
    }

    fn handshake(
        &mut self,
        broker: &Broker,
        version: i16,
        request: SaslHandshakeRequest,
    ) -> (SaslHandshakeResponse, Option<String>) {
        let config = &broker.config.sasl;
        let answer = |error: Option<ResponseError>| {
            SaslHandshakeResponse::default()
                .with_error_code(error.map_or(0, |e| e.code()))
                .with_mechanisms(
                    config
                        .mechanisms
                        .iter()
                        .map(|m| StrBytes::from_static_str(m.name()))
                        .collect(),
                )
        };
        if !self.protocol.is_sasl() {
            return (answer(Some(ResponseError::IllegalSaslState)), None);
        }
        if !matches!(self.step, Step::Idle) {
            return (
                answer(Some(ResponseError::IllegalSaslState)),
                Some("SaslHandshake in the middle of an exchange".into()),
            );
        }
        let asked =
            Mechanism::from_name(&request.mechanism).filter(|m| config.mechanisms.contains(m));
        if self.principal.is_some() {
            // Re-authentication: only offered when sessions expire, only
            // with SaslAuthenticate frames, only with the same mechanism.
            if config.session_lifetime_ms == 0 || version == 0 {
                return (answer(Some(ResponseError::IllegalSaslState)), None);
            }
            if asked.is_some() && asked != self.mechanism {
                return (
                    answer(Some(ResponseError::UnsupportedSaslMechanism)),
                    Some("re-authentication with another mechanism".into()),
                );
            }
        }
        let Some(mechanism) = asked else {
            return (
                answer(Some(ResponseError::UnsupportedSaslMechanism)),
                Some(format!(
                    "unsupported SASL mechanism {:?}",
                    request.mechanism.as_str()
                )),
            );
        };
        self.step = Step::Chosen {
            mechanism,
            raw: version == 0,
        };
        (answer(None), None)
    }

    async fn authenticate(
        &mut self,
        broker: &Broker,
        version: i16,
        request: SaslAuthenticateRequest,
    ) -> (SaslAuthenticateResponse, Option<String>) {
        let failed = |error: ResponseError, message: String| {
            SaslAuthenticateResponse::default()
                .with_error_code(error.code())
                .with_error_message(Some(StrBytes::from_string(message)))
        };
        if !self.protocol.is_sasl() {
            let why = "SaslAuthenticate on a listener without SASL".to_owned();
            return (failed(ResponseError::IllegalSaslState, why), None);
        }
        if matches!(self.step, Step::Idle) {
            let why = "SaslAuthenticate without SaslHandshake".to_owned();
            return (
                failed(ResponseError::IllegalSaslState, why.clone()),
                Some(why),
            );
        }
        match self.token(broker, &request.auth_bytes).await {
            Ok(Progress::Continue(token)) => (
                SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(token)),
                None,
            ),
            Ok(Progress::Done(token)) => {
                let mut answer =
                    SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(token));
                if version >= 1 {
                    answer.session_lifetime_ms = broker.config.sasl.session_lifetime_ms;
                }
                (answer, None)
            }
            Err(Refusal(why)) => (
                failed(ResponseError::SaslAuthenticationFailed, why.clone()),
                Some(why),
            ),
        }
    }

    /// Takes the next token of the exchange.
    async fn token(&mut self, broker: &Broker, token: &[u8]) -> Result<Progress, Refusal> {
        let config = &broker.config.sasl;
        match std::mem::replace(&mut self.step, Step::Idle) {
            Step::Idle => Err(Refusal("no SASL mechanism was chosen".into())),
            Step::Chosen {
                mechanism: Mechanism::Plain,
                ..
            } => {
                let message = plain::parse(token)?;
                if !plain_password_matches(broker, config, &message).await? {
                    return Err(Refusal(format!(
                        "Authentication failed: Invalid username or password (user {:?})",
                        message.user
                    )));
                }
                self.authenticated(
                    Principal::user(&message.user),
                    Mechanism::Plain,
                    config.session_lifetime_ms,
                )?;
                Ok(Progress::Done(Vec::new()))
            }
            Step::Chosen {
                mechanism: Mechanism::Scram(mechanism),
                raw,
            } => {
                let first = parse_client_first(token)?;
                let credential = broker
                    .engine
                    .scram_credential(&first.user, mechanism)
                    .await
                    .map_err(|e| {
                        tracing::warn!(error = %e, "kafka: cannot read SCRAM credentials");
                        Refusal("authentication is unavailable: the user store failed".into())
                    })?;
                let mut nonce = [0u8; 24];
                getrandom::getrandom(&mut nonce)?;
                let (exchange, reply) =
                    Exchange::start(mechanism, first, credential, &nonce, |user| {
                        config.decoy_salt(mechanism, user)
                    });
                self.step = Step::Scram {
                    exchange: Box::new(exchange),
                    mechanism,
                    raw,
                };
                Ok(Progress::Continue(reply))
            }
            Step::Scram {
                exchange,
                mechanism,
                ..
            } => {
                let principal = Principal::user(exchange.user());
                let reply = exchange.finish(token)?;
                self.authenticated(
                    principal,
                    Mechanism::Scram(mechanism),
                    config.session_lifetime_ms,
                )?;
                Ok(Progress::Done(reply))
            }
        }
    }

    /// Records a successful (re-)authentication lasting `lifetime_ms`
    /// (0: for the connection's life).
    fn authenticated(
        &mut self,
        principal: Principal,
        mechanism: Mechanism,
        lifetime_ms: i64,
    ) -> Result<(), Refusal> {
        if let Some(before) = &self.principal {
            if *before != principal {
                return Err(Refusal(format!(
                    "re-authentication as {principal} on a connection of {before}"
                )));
            }
        }
        tracing::debug!(%principal, mechanism = mechanism.name(), "kafka: authenticated");
        self.principal = Some(principal);
        self.mechanism = Some(mechanism);
        let lifetime = u64::try_from(lifetime_ms).unwrap_or(0);
        self.expires = (lifetime > 0).then(|| Instant::now() + Duration::from_millis(lifetime));
        Ok(())
    }
}

/// Whether PLAIN's password matches the user's credential in the store.
async fn plain_password_matches(
    broker: &Broker,
    config: &SaslConfig,
    message: &plain::PlainMessage,
) -> Result<bool, Refusal> {
    password::password_matches(&broker.engine, config, &message.user, &message.password)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "kafka: cannot check a PLAIN password");
            Refusal("authentication is unavailable: the user store failed".into())
        })
}
