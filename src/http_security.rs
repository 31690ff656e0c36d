//! The HTTP API's security from the flags: TLS (`--http-tls-*`, with the
//! PEM loading the Kafka listeners use), authentication (`--http-auth`,
//! `--http-jwt-*`), and the start-up rule for an API that authenticates
//! nobody: a warning beyond loopback, a refusal under `--require-auth`.

use std::net::SocketAddr;

use anyhow::{bail, Context};
use facade::tls::{ClientAuth, TlsFiles};
use storage::Engine;
use tokio_rustls::TlsAcceptor;

use crate::config::Config;
use crate::http::auth::{HttpAuth, JwtSettings, JwtVerifier};

/// The TLS acceptor of `--http-tls-cert` and `--http-tls-key`, if given.
pub fn tls(config: &Config) -> anyhow::Result<Option<TlsAcceptor>> {
    let (Some(cert), Some(key)) = (&config.http_tls_cert, &config.http_tls_key) else {
        return Ok(None);
    };
    let files = TlsFiles {
        cert: cert.clone(),
        key: key.clone(),
        client_ca: config.http_tls_client_ca.clone(),
        client_auth: if config.http_tls_client_ca.is_some() {
            ClientAuth::Required
        } else {
            ClientAuth::None
        },
    };
    let acceptor = facade::tls::acceptor(&files).context("the HTTP TLS settings")?;
    Ok(Some(acceptor))
}

/// The authentication `--http-auth` enables (`None`: off). Basic checks
/// passwords against `engine`'s users, with `sasl`'s decoys for unknown
/// ones, as the Kafka door's PLAIN does.
pub fn auth(
    config: &Config,
    engine: &Engine,
    sasl: &facade::SaslConfig,
) -> anyhow::Result<Option<HttpAuth>> {
    let wants = |method: &str| config.http_auth.iter().any(|m| m == method);
    let jwt_flags = config.http_jwt_secret_file.is_some()
        || config.http_jwt_public_key_file.is_some()
        || config.http_jwt_jwks_file.is_some();
    if jwt_flags && !wants("jwt") {
        bail!("--http-jwt-* key flags are given but --http-auth does not name jwt");
    }
    let jwt = if wants("jwt") {
        let settings = JwtSettings {
            secret_file: config.http_jwt_secret_file.clone(),
            public_key_file: config.http_jwt_public_key_file.clone(),
            jwks_file: config.http_jwt_jwks_file.clone(),
            issuer: config.http_jwt_issuer.clone(),
            audience: config.http_jwt_audience.clone(),
            leeway_secs: config.http_jwt_leeway_secs,
        };
        Some(JwtVerifier::load(&settings).context("--http-auth jwt")?)
    } else {
        None
    };
    let basic = wants("basic").then(|| (engine.clone(), sasl.clone()));
    Ok(HttpAuth::new(jwt, basic))
}

/// Refuses (under `--require-auth`) or warns about (beyond loopback) an
/// HTTP API at `local` that does not authenticate.
pub fn check_exposure(
    config: &Config,
    local: SocketAddr,
    authenticated: bool,
) -> anyhow::Result<()> {
    if authenticated {
        return Ok(());
    }
    if config.require_auth {
        bail!(
            "--require-auth: the HTTP API on {local} does not authenticate clients \
             (use --http-auth jwt and/or basic)"
        );
    }
    if !local.ip().is_loopback() {
        tracing::warn!(address = %local, "the HTTP API accepts anyone who reaches it: no authentication on a non-loopback address");
    }
    Ok(())
}
