//! Authentication on the Kafka door: who a connection is.
//!
//! - [`credential`]: SCRAM credentials from passwords (stored) and the
//!   PLAIN check against them.
//! - [`scram`], [`plain`]: the mechanisms' messages, parsed and answered.
//! - [`password`]: a user name and password checked against the user
//!   store (PLAIN here, HTTP Basic on the other door).
//! - [`session`]: one connection's SASL state (SaslHandshake v0/v1,
//!   SaslAuthenticate, raw v0 tokens, KIP-368 re-authentication) and the
//!   gate that serves nothing else before it succeeds.
//!
//! The principal (`User:name`) is kept on the connection for authorization.

pub mod credential;
pub mod password;
pub mod plain;
pub mod scram;
pub(crate) mod session;
mod verified;

use storage::ScramMechanism;

/// Who a connection authenticated as, written as Kafka writes principals.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    /// `User:name`.
    pub fn user(name: &str) -> Self {
        Self(format!("User:{name}"))
    }

    /// `User:ANONYMOUS`: a connection on a listener without authentication.
    pub fn anonymous() -> Self {
        Self::user("ANONYMOUS")
    }

    /// The principal as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A SASL mechanism this broker offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// PLAIN, checked against the SCRAM credentials.
    Plain,
    /// SCRAM-SHA-256 or SCRAM-SHA-512.
    Scram(ScramMechanism),
}

impl Mechanism {
    /// Every mechanism, in the order they are offered by default.
    pub const ALL: [Self; 3] = [
        Self::Scram(ScramMechanism::Sha512),
        Self::Scram(ScramMechanism::Sha256),
        Self::Plain,
    ];

    /// The SASL name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::Scram(m) => m.name(),
        }
    }

    /// The mechanism named `name` (as clients send it: upper case).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// How SASL listeners authenticate.
#[derive(Clone)]
pub struct SaslConfig {
    /// The mechanisms offered, in order.
    pub mechanisms: Vec<Mechanism>,
    /// KIP-368: how long an authentication lasts, in ms (Kafka's
    /// `connections.max.reauth.ms`); 0 means for the connection's life,
    /// and a client is never asked to re-authenticate.
    pub session_lifetime_ms: i64,
    /// A secret of this broker's: the salt shown to an unknown user is
    /// derived from it, so it is stable and looks like a real one.
    decoy_key: [u8; 32],
    /// Passwords found correct, shared by every clone.
    verified: std::sync::Arc<verified::VerifiedPasswords>,
}

impl std::fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslConfig")
            .field("mechanisms", &self.mechanisms)
            .field("session_lifetime_ms", &self.session_lifetime_ms)
            .finish_non_exhaustive()
    }
}

impl SaslConfig {
    /// The settings, with a fresh decoy secret.
    pub fn new(mechanisms: Vec<Mechanism>, session_lifetime_ms: i64) -> Self {
        let mut decoy_key = [0u8; 32];
        // Without randomness the decoy salts are merely predictable; the
        // proof check does not depend on them.
        if let Err(e) = getrandom::getrandom(&mut decoy_key) {
            tracing::warn!(error = %e, "no randomness for the SCRAM decoy key");
        }
        Self {
            mechanisms,
            session_lifetime_ms: session_lifetime_ms.max(0),
            decoy_key,
            verified: std::sync::Arc::new(verified::VerifiedPasswords::new()),
        }
    }

    /// The passwords found correct.
    pub(crate) fn verified(&self) -> &verified::VerifiedPasswords {
        &self.verified
    }

    /// The salt shown to `user` when it does not exist.
    pub(crate) fn decoy_salt(&self, mechanism: ScramMechanism, user: &str) -> Vec<u8> {
        let mut salt = credential::hmac(mechanism, &self.decoy_key, user.as_bytes());
        salt.truncate(32);
        salt
    }
}

impl Default for SaslConfig {
    fn default() -> Self {
        Self::new(Mechanism::ALL.to_vec(), 0)
    }
}
