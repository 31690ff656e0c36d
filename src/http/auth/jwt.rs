//! Bearer tokens: JWTs checked against the configured keys (an HS* shared
//! secret, an RSA or EC public key, the keys of a JWKS file), with `exp`
//! and `nbf` always checked and `iss`/`aud` when configured. The token's
//! `sub` names the caller.

use std::path::{Path, PathBuf};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// The shortest HS* secret accepted: 256 bits, as RFC 7518 (3.2) asks of
/// HS256 keys.
const MIN_SECRET_BYTES: usize = 32;

/// Where the keys are and what tokens must say.
#[derive(Debug, Clone, Default)]
pub struct JwtSettings {
    /// A file holding the HS* shared secret.
    pub secret_file: Option<PathBuf>,
    /// A PEM public key (RSA or EC).
    pub public_key_file: Option<PathBuf>,
    /// A JWKS file.
    pub jwks_file: Option<PathBuf>,
    /// The `iss` required, if any.
    pub issuer: Option<String>,
    /// The `aud` required, if any.
    pub audience: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
}

/// Why the keys could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum JwtKeyError {
    /// A key file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The failure.
        source: std::io::Error,
    },
    /// A key file holds nothing usable.
    #[error("{path}: {reason}")]
    Unusable {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No key was configured at all.
    #[error("bearer tokens need a key: --http-jwt-secret-file, --http-jwt-public-key-file or --http-jwt-jwks-file")]
    NoKey,
}

/// One key and the algorithms tokens signed with it may name.
struct Key {
    /// The JWKS `kid`; keys from the other files have none and serve any.
    kid: Option<String>,
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

/// Checks bearer tokens.
pub struct JwtVerifier {
    keys: Vec<Key>,
    issuer: Option<String>,
    audience: Option<String>,
    leeway_secs: u64,
}

impl std::fmt::Debug for JwtVerifier {
    // Keys stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("keys", &self.keys.len())
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// The claims read from a token besides the checked ones.
#[derive(Deserialize)]
struct Claims {
    sub: String,
}

const HMAC: [Algorithm; 3] = [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512];
const RSA: [Algorithm; 6] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

fn read(path: &Path) -> Result<Vec<u8>, JwtKeyError> {
    std::fs::read(path).map_err(|source| JwtKeyError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn unusable(path: &Path, reason: impl ToString) -> JwtKeyError {
    JwtKeyError::Unusable {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

impl JwtVerifier {
    /// Loads the keys `settings` name; at least one is needed.
    pub fn load(settings: &JwtSettings) -> Result<Self, JwtKeyError> {
        let mut keys = Vec::new();
        if let Some(path) = &settings.secret_file {
            let mut secret = read(path)?;
            // A file written by `echo` ends with a newline nobody meant.
            while secret.last().is_some_and(u8::is_ascii_whitespace) {
                secret.pop();
            }
            if secret.len() < MIN_SECRET_BYTES {
                return Err(unusable(
                    path,
                    format!("an HS256 secret needs at least {MIN_SECRET_BYTES} bytes"),
                ));
            }
            keys.push(Key {
                kid: None,
                key: DecodingKey::from_secret(&secret),
                algorithms: HMAC.to_vec(),
            });
        }
        if let Some(path) = &settings.public_key_file {
            let pem = read(path)?;
            let key = if let Ok(key) = DecodingKey::from_rsa_pem(&pem) {
                Key {
                    kid: None,
                    key,
                    algorithms: RSA.to_vec(),
                }
            } else {
                let key = DecodingKey::from_ec_pem(&pem).map_err(|_| {
                    unusable(path, "not a PEM RSA or EC public key (or certificate)")
                })?;
                // The curve decides between them: the other one fails.
                Key {
                    kid: None,
                    key,
                    algorithms: vec![Algorithm::ES256, Algorithm::ES384],
                }
            };
            keys.push(key);
        }
        if let Some(path) = &settings.jwks_file {
            let set: JwkSet =
                serde_json::from_slice(&read(path)?).map_err(|e| unusable(path, e))?;
            let before = keys.len();
            for jwk in &set.keys {
                if matches!(
                    jwk.common.public_key_use,
                    Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
                ) {
                    continue;
                }
                let algorithms = match (&jwk.algorithm, jwk.common.key_algorithm) {
                    (_, Some(named)) => match named.to_string().parse::<Algorithm>() {
                        Ok(a) => vec![a],
                        // An encryption algorithm: not a signing key.
                        Err(_) => continue,
                    },
                    (AlgorithmParameters::RSA(_), None) => RSA.to_vec(),
                    (AlgorithmParameters::EllipticCurve(p), None) => match p.curve {
                        EllipticCurve::P256 => vec![Algorithm::ES256],
                        EllipticCurve::P384 => vec![Algorithm::ES384],
                        _ => continue,
                    },
                    (AlgorithmParameters::OctetKeyPair(_), None) => vec![Algorithm::EdDSA],
                    (AlgorithmParameters::OctetKey(_), None) => HMAC.to_vec(),
                };
                let key = DecodingKey::from_jwk(jwk).map_err(|e| {
                    unusable(
                        path,
                        format!("key {:?}: {e}", jwk.common.key_id.as_deref().unwrap_or("")),
                    )
                })?;
                keys.push(Key {
                    kid: jwk.common.key_id.clone(),
                    key,
                    algorithms,
                });
            }
            if keys.len() == before {
                return Err(unusable(path, "no signing key in the JWKS"));
            }
        }
        if keys.is_empty() {
            return Err(JwtKeyError::NoKey);
        }
        Ok(Self {
            keys,
            issuer: settings.issuer.clone(),
            audience: settings.audience.clone(),
            leeway_secs: settings.leeway_secs,
        })
    }

    /// The `sub` of `token` if it is signed by one of the keys, names an
    /// algorithm that key allows, and its claims hold; else why not.
    pub fn subject(&self, token: &str) -> Result<String, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| format!("malformed: {e}"))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.leeway_secs;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
        }
        match &self.audience {
            Some(audience) => validation.set_audience(&[audience]),
            // Otherwise a token that names an audience would be refused.
            None => validation.validate_aud = false,
        }
        let mut refusal = format!("no key for algorithm {:?}", header.alg);
        for key in self.keys.iter().filter(|k| {
            k.algorithms.contains(&header.alg)
                && (k.kid.is_none() || header.kid.is_none() || k.kid == header.kid)
        }) {
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) if data.claims.sub.is_empty() => return Err("empty sub".into()),
                Ok(data) => return Ok(data.claims.sub),
                Err(e) => refusal = e.to_string(),
            }
        }
        Err(refusal)
    }
}
