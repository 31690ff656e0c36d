//! The Kafka listeners from the flags: parsed (`NAME://host:port`, as
//! Kafka's `listeners` and `advertised.listeners`), checked against the
//! safety rules (a warning, or a refusal under `--require-auth`, for what
//! does not authenticate), bound, and given TLS where they need it; and
//! who is authorized (`--authorizer`, `--super-users`).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{bail, Context};
use facade::tls::{ClientAuth, TlsFiles};
use facade::{Listener, SecurityProtocol};
use tokio::net::TcpListener;

use crate::config::Config;

/// One `NAME://host:port` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The listener's protocol, which is also its name.
    pub protocol: SecurityProtocol,
    /// The host (empty: every interface).
    pub host: String,
    /// The port.
    pub port: u16,
}

/// Parses `NAME://host:port`; `[v6]` hosts keep their brackets off.
pub fn parse_endpoint(text: &str) -> anyhow::Result<Endpoint> {
    let (name, address) = text
        .trim()
        .split_once("://")
        .with_context(|| format!("listener {text:?} is not NAME://host:port"))?;
    let protocol = SecurityProtocol::from_name(name).with_context(|| {
        format!("listener {text:?}: {name:?} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    })?;
    let (host, port) = address
        .rsplit_once(':')
        .with_context(|| format!("listener {text:?} has no port"))?;
    let port = port
        .parse()
        .with_context(|| format!("listener {text:?} has no valid port"))?;
    Ok(Endpoint {
        protocol,
        host: host.trim_matches(['[', ']']).to_owned(),
        port,
    })
}

/// The listeners the flags ask for: `--kafka-listeners`, or the one
/// PLAINTEXT listener of `--kafka-addr`.
fn wanted(config: &Config) -> anyhow::Result<Vec<Endpoint>> {
    if config.kafka_listeners.is_empty() {
        return Ok(vec![Endpoint {
            protocol: SecurityProtocol::Plaintext,
            host: config.kafka_addr.ip().to_string(),
            port: config.kafka_addr.port(),
        }]);
    }
    let mut endpoints: Vec<Endpoint> = Vec::new();
    for text in &config.kafka_listeners {
        let endpoint = parse_endpoint(text)?;
        if endpoints.iter().any(|e| e.protocol == endpoint.protocol) {
            bail!(
                "listener {} is given twice (one listener per protocol)",
                endpoint.protocol.name()
            );
        }
        endpoints.push(endpoint);
    }
    Ok(endpoints)
}

/// What `--kafka-ssl-client-auth` says.
fn client_auth(config: &Config) -> ClientAuth {
    match config.kafka_ssl_client_auth.as_str() {
        "required" => ClientAuth::Required,
        "requested" => ClientAuth::Requested,
        _ => ClientAuth::None,
    }
}

/// Binds every listener and builds what its connections need. Refuses
/// (under `--require-auth`) or warns about listeners that let anyone in
/// from beyond loopback.
pub async fn bind(config: &Config) -> anyhow::Result<Vec<(TcpListener, Arc<Listener>)>> {
    let endpoints = wanted(config)?;
    let mut advertised = Vec::new();
    for text in &config.kafka_advertised_listeners {
        let endpoint = parse_endpoint(text)?;
        if !endpoints.iter().any(|e| e.protocol == endpoint.protocol) {
            bail!("advertised listener {text:?} names no listener of --kafka-listeners");
        }
        advertised.push(endpoint);
    }
    let client_auth = client_auth(config);
    let tls = if endpoints.iter().any(|e| e.protocol.is_tls()) {
        let (Some(cert), Some(key)) = (&config.kafka_ssl_cert, &config.kafka_ssl_key) else {
            bail!("SSL and SASL_SSL listeners need --kafka-ssl-cert and --kafka-ssl-key");
        };
        let files = TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: config.kafka_ssl_client_ca.clone(),
            client_auth,
        };
        Some(facade::tls::acceptor(&files).context("the Kafka TLS settings")?)
    } else {
        None
    };
    let mut bound = Vec::new();
    for endpoint in endpoints {
        let host = if endpoint.host.is_empty() {
            "0.0.0.0"
        } else {
            endpoint.host.as_str()
        };
        let socket = TcpListener::bind((host, endpoint.port))
            .await
            .with_context(|| {
                format!(
                    "binding the Kafka listener {}://{host}:{}",
                    endpoint.protocol.name(),
                    endpoint.port
                )
            })?;
        let local = socket.local_addr()?;
        check_exposure(
            config,
            endpoint.protocol,
            local,
            client_auth == ClientAuth::Required,
        )?;
        let (advertised_host, advertised_port) =
            match advertised.iter().find(|a| a.protocol == endpoint.protocol) {
                Some(a) => (a.host.clone(), i32::from(a.port)),
                None if config.kafka_listeners.is_empty() => crate::advertised(config, local)?,
                None => (local.ip().to_string(), i32::from(local.port())),
            };
        let listener = Listener {
            name: endpoint.protocol.name().to_owned(),
            protocol: endpoint.protocol,
            advertised_host,
            advertised_port,
            tls: endpoint.protocol.is_tls().then(|| tls.clone()).flatten(),
        };
        bound.push((socket, Arc::new(listener)));
    }
    Ok(bound)
}

/// Warns about (or, under `--require-auth`, refuses) a listener reachable
/// from other hosts that lets clients in without proving who they are.
fn check_exposure(
    config: &Config,
    protocol: SecurityProtocol,
    local: SocketAddr,
    client_cert_required: bool,
) -> anyhow::Result<()> {
    if protocol.authenticates(client_cert_required) {
        return Ok(());
    }
    if config.require_auth {
        bail!(
            "--require-auth: the Kafka listener {}://{local} does not authenticate clients \
             (use SASL_PLAINTEXT, SASL_SSL, or SSL with --kafka-ssl-client-auth required)",
            protocol.name()
        );
    }
    if !local.ip().is_loopback() {
        tracing::warn!(
            listener = protocol.name(),
            address = %local,
            "the Kafka listener accepts anyone who reaches it: no authentication on a non-loopback address"
        );
    }
    Ok(())
}

/// The SASL settings of the flags.
pub fn sasl(config: &Config) -> anyhow::Result<facade::SaslConfig> {
    let mut mechanisms = Vec::new();
    for name in &config.kafka_sasl_mechanisms {
        let mechanism = facade::auth::Mechanism::from_name(name.trim()).with_context(|| {
            format!("SASL mechanism {name:?} is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
        })?;
        if !mechanisms.contains(&mechanism) {
            mechanisms.push(mechanism);
        }
    }
    if mechanisms.is_empty() {
        bail!("--kafka-sasl-mechanisms names no mechanism");
    }
    Ok(facade::SaslConfig::new(
        mechanisms,
        config.kafka_sasl_session_lifetime_ms.max(0),
    ))
}

/// The authorization settings of the flags (`--authorizer`,
/// `--super-users`), checked: a super user must be a `Type:name` principal.
pub fn authorization(config: &Config) -> anyhow::Result<storage::AuthorizerConfig> {
    let mut super_users = Vec::new();
    for principal in config.super_users.iter().map(|p| p.trim()) {
        if principal.is_empty() {
            continue;
        }
        if !principal
            .split_once(':')
            .is_some_and(|(k, n)| !k.is_empty() && !n.is_empty())
        {
            bail!("--super-users: {principal:?} is not a principal such as User:admin");
        }
        super_users.push(principal.to_owned());
    }
    Ok(storage::AuthorizerConfig {
        enabled: config.authorizer == "acl",
        super_users,
        allow_if_no_acl: config.allow_everyone_if_no_acl_found,
        ..storage::AuthorizerConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_like_kafka_listeners() {
        assert_eq!(
            parse_endpoint("SASL_SSL://0.0.0.0:9093").expect("parsed"),
            Endpoint {
                protocol: SecurityProtocol::SaslSsl,
                host: "0.0.0.0".into(),
                port: 9093
            }
        );
        assert_eq!(
            parse_endpoint("plaintext://[::1]:9092").expect("v6").host,
            "::1"
        );
        assert_eq!(parse_endpoint("SSL://:9094").expect("any").host, "");
        for bad in ["9092", "GSSAPI://h:1", "SSL://host", "SSL://h:port"] {
            assert!(parse_endpoint(bad).is_err(), "{bad}");
        }
    }
}
