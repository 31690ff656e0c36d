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

#[cfg(test)]
mod tests {
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or_default()
    }

    fn file(dir: &tempfile::TempDir, name: &str, contents: &[u8]) -> Option<PathBuf> {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).expect("write");
        Some(path)
    }

    fn hs256(claims: serde_json::Value) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(SECRET),
        )
        .expect("token")
    }

    #[test]
    fn claims_are_checked() {
        let dir = tempfile::tempdir().expect("dir");
        let settings = JwtSettings {
            secret_file: file(&dir, "secret", SECRET),
            issuer: Some("idp".into()),
            audience: Some("queen".into()),
            ..JwtSettings::default()
        };
        let verifier = JwtVerifier::load(&settings).expect("loaded");
        let good = json!({"sub": "s", "exp": now() + 60, "iss": "idp", "aud": "queen"});
        assert_eq!(verifier.subject(&hs256(good.clone())), Ok("s".into()));
        for (what, change) in [
            ("expired", json!({"exp": now() - 120})),
            ("not yet valid", json!({"nbf": now() + 120})),
            ("another issuer", json!({"iss": "elsewhere"})),
            ("another audience", json!({"aud": "other"})),
            ("no subject", json!({"sub": null})),
            ("empty subject", json!({"sub": ""})),
            ("no expiry", json!({"exp": null})),
        ] {
            let mut claims = good.clone();
            for (k, v) in change.as_object().expect("object") {
                if v.is_null() {
                    claims.as_object_mut().expect("object").remove(k);
                } else {
                    claims[k] = v.clone();
                }
            }
            assert!(verifier.subject(&hs256(claims)).is_err(), "{what}");
        }
        assert!(verifier.subject("not.a.token").is_err());
        assert!(verifier.subject("").is_err());
    }

    #[test]
    fn a_public_key_is_not_an_hmac_secret() {
        let dir = tempfile::tempdir().expect("dir");
        let key = rcgen::KeyPair::generate().expect("P-256 key");
        let public = key.public_key_pem();
        let settings = JwtSettings {
            public_key_file: file(&dir, "public.pem", public.as_bytes()),
            ..JwtSettings::default()
        };
        let verifier = JwtVerifier::load(&settings).expect("loaded");
        let claims = json!({"sub": "s", "exp": now() + 60});
        let es256 = jsonwebtoken::encode(
            &Header::new(Algorithm::ES256),
            &claims,
            &EncodingKey::from_ec_pem(key.serialize_pem().as_bytes()).expect("key"),
        )
        .expect("token");
        assert_eq!(verifier.subject(&es256), Ok("s".into()));
        // The classic confusion: HS256 keyed with the public key's text.
        let confused = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(public.as_bytes()),
        )
        .expect("token");
        assert!(verifier.subject(&confused).is_err());
    }

    #[test]
    fn unusable_keys_are_refused_at_load() {
        let dir = tempfile::tempdir().expect("dir");
        for settings in [
            JwtSettings::default(),
            JwtSettings {
                secret_file: file(&dir, "short", b"short secret\n"),
                ..JwtSettings::default()
            },
            JwtSettings {
                public_key_file: file(&dir, "garbage.pem", b"-----BEGIN PUBLIC KEY-----\n"),
                ..JwtSettings::default()
            },
            JwtSettings {
                jwks_file: file(&dir, "empty.json", br#"{"keys":[]}"#),
                ..JwtSettings::default()
            },
            JwtSettings {
                jwks_file: file(&dir, "bad.json", b"{"),
                ..JwtSettings::default()
            },
            JwtSettings {
                secret_file: Some(dir.path().join("missing")),
                ..JwtSettings::default()
            },
        ] {
            assert!(JwtVerifier::load(&settings).is_err(), "{settings:?}");
        }
    }
}
