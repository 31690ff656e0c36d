//! TLS from PEM files through rustls (on ring), for the Kafka listeners
//! and the HTTP API alike: optionally verifying client certificates against
//! a CA, whose subject then names a Kafka connection's principal.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use x509_cert::der::Decode;

use crate::auth::Principal;

/// Whether TLS listeners ask clients for a certificate (Kafka's
/// `ssl.client.auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// Never asked.
    None,
    /// Asked and verified when given; a client without one is anonymous.
    Requested,
    /// A client without a valid certificate is refused in the handshake.
    Required,
}

/// Where the listener's TLS material is.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, PEM, leaf first.
    pub cert: PathBuf,
    /// The private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// The CA certificates client certificates are verified against, PEM.
    pub client_ca: Option<PathBuf>,
    /// Whether clients are asked for a certificate.
    pub client_auth: ClientAuth,
}

/// Why the TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Client certificates are asked for, but no CA says which to trust.
    #[error("client certificate authentication needs a CA file of client certificates")]
    NoClientCa,
    /// rustls refused the material.
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client CA could not be turned into a verifier.
    #[error("client certificate verifier: {0}")]
    Verifier(String),
}

fn file_error(path: &std::path::Path, reason: impl ToString) -> TlsError {
    TlsError::File {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

fn certificates(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(path, e))?;
    if certs.is_empty() {
        return Err(file_error(path, "no certificate in the file"));
    }
    Ok(certs)
}

/// The rustls server settings of `files`.
pub fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| file_error(&files.key, e))?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match files.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        auth => {
            let ca = files.client_ca.as_ref().ok_or(TlsError::NoClientCa)?;
            let mut roots = RootCertStore::empty();
            for cert in certificates(ca)? {
                roots.add(cert).map_err(|e| file_error(ca, e))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| TlsError::Verifier(e.to_string()))?,
            )
        }
    };
    Ok(Arc::new(builder.with_single_cert(chain, key)?))
}

/// The acceptor of TLS listeners with `files`' settings.
pub fn acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
    Ok(tokio_rustls::TlsAcceptor::from(server_config(files)?))
}

/// The principal a verified client certificate names: `User:` and its
/// subject as an RFC 4514 string (`CN=client,O=Example`), as Kafka's
/// default SSL principal builder writes it.
pub fn certificate_principal(der: &[u8]) -> Option<Principal> {
    let cert = x509_cert::Certificate::from_der(der).ok()?;
    // x509-cert writes RFC 4514 order (the most specific RDN first, the
    // reverse of the encoding), as Java's X500Principal does for Kafka.
    Some(Principal::user(&cert.tbs_certificate.subject.to_string()))
}
