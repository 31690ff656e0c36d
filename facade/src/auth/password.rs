//! A user name and password checked against the user store: what SASL
//! PLAIN does on the Kafka door and HTTP Basic on the other, so both doors
//! accept the same passwords and neither keeps one.

use storage::{Engine, ScramCredential, ScramMechanism, UserError};

use super::{credential, SaslConfig};

/// Why a password could not be checked (as opposed to: it is wrong).
#[derive(Debug, thiserror::Error)]
pub enum PasswordCheckError {
    /// The user store could not be read.
    #[error("the user store failed: {0}")]
    Store(#[from] UserError),
    /// The derivation task did not finish.
    #[error("the password check failed: {0}")]
    Task(String),
}

/// Whether `password` is `user`'s, checked against the user's SCRAM
/// credential (the SHA-512 one, else the SHA-256 one). An unknown user
/// pays the same derivation against a decoy, so timing does not tell
/// users apart. A password found correct before against the same stored
/// credential is not derived again ([`super::verified`]): a known user's
/// repeat is faster than a first check, which tells nothing new (the
/// user had authenticated).
pub async fn password_matches(
    engine: &Engine,
    config: &SaslConfig,
    user: &str,
    password: &str,
) -> Result<bool, PasswordCheckError> {
    let mut found = None;
    for mechanism in [ScramMechanism::Sha512, ScramMechanism::Sha256] {
        if let Some(c) = engine.scram_credential(user, mechanism).await? {
            found = Some((mechanism, c));
            break;
        }
    }
    let known = found.is_some();
    // A password found correct before against the same credential.
    let tag = found
        .as_ref()
        .map(|(m, c)| config.verified().tag(*m, user, password, c));
    if tag.as_ref().is_some_and(|t| config.verified().contains(t)) {
        return Ok(true);
    }
    let (mechanism, credential) = found.unwrap_or_else(|| {
        let m = ScramMechanism::Sha512;
        (
            m,
            ScramCredential {
                salt: config.decoy_salt(m, user),
                iterations: credential::DEFAULT_ITERATIONS,
                stored_key: vec![0; m.key_len()],
                server_key: vec![0; m.key_len()],
            },
        )
    });
    let password = password.to_owned();
    // PBKDF2 takes milliseconds: off the caller's runtime thread.
    let matches = tokio::task::spawn_blocking(move || {
        credential::password_matches(mechanism, &credential, &password)
    })
    .await
    .map_err(|e| PasswordCheckError::Task(e.to_string()))?;
    if let (true, Some(tag)) = (matches, tag) {
        config.verified().insert(tag);
    }
    Ok(known && matches)
}
