//! Kafka listeners: a name, a security protocol (as Kafka's
//! `listener.security.protocol.map` with names equal to protocols), the
//! address clients are told to use, and TLS settings when it needs them.

use std::sync::Arc;

use tokio_rustls::TlsAcceptor;

/// How a listener protects and authenticates its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// No TLS, no authentication: every connection is `User:ANONYMOUS`.
    Plaintext,
    /// TLS; the client certificate's subject is the principal when one is
    /// given (else `User:ANONYMOUS`).
    Ssl,
    /// SASL without TLS.
    SaslPlaintext,
    /// SASL inside TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Every protocol.
    pub const ALL: [Self; 4] = [
        Self::Plaintext,
        Self::Ssl,
        Self::SaslPlaintext,
        Self::SaslSsl,
    ];

    /// Kafka's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol named `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Whether connections must authenticate with SASL first.
    pub fn is_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }

    /// Whether connections are TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether a client must prove who it is on this listener (SASL, or a
    /// client certificate required by the TLS settings).
    pub fn authenticates(self, client_cert_required: bool) -> bool {
        self.is_sasl() || (self == Self::Ssl && client_cert_required)
    }
}

/// One listener as the connections on it see it.
#[derive(Clone)]
pub struct Listener {
    /// The listener's name; clients connecting through it are given each
    /// broker's address on the listener of the same name.
    pub name: String,
    /// Its security protocol.
    pub protocol: SecurityProtocol,
    /// The host clients are told to connect to.
    pub advertised_host: String,
    /// The port clients are told to connect to.
    pub advertised_port: i32,
    /// The TLS acceptor, for SSL and SASL_SSL.
    pub tls: Option<TlsAcceptor>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("name", &self.name)
            .field("protocol", &self.protocol)
            .field("advertised_host", &self.advertised_host)
            .field("advertised_port", &self.advertised_port)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Listener {
    /// A PLAINTEXT listener advertised at `host:port`.
    pub fn plaintext(host: impl Into<String>, port: i32) -> Arc<Self> {
        Arc::new(Self {
            name: SecurityProtocol::Plaintext.name().to_owned(),
            protocol: SecurityProtocol::Plaintext,
            advertised_host: host.into(),
            advertised_port: port,
            tls: None,
        })
    }
}
