//! SCRAM credentials from a password (RFC 5802 section 3): what is stored,
//! and the same derivation again to check a PLAIN password against it.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use storage::{ScramCredential, ScramMechanism};
use subtle::ConstantTimeEq;

/// The fewest PBKDF2 iterations accepted for a new credential (Kafka's).
pub const MIN_ITERATIONS: i32 = 4096;
/// The most PBKDF2 iterations accepted (Kafka's): each PLAIN check and
/// each new credential pays them.
pub const MAX_ITERATIONS: i32 = 16384;
/// The iterations of credentials made without a count (`queen user add`),
/// and of the decoys an unknown user is checked against, so that checking
/// one costs what checking a real user usually does.
pub const DEFAULT_ITERATIONS: i32 = 8192;
/// The salt length of credentials made here.
const SALT_BYTES: usize = 32;

/// Why a credential could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// Iterations outside [`MIN_ITERATIONS`]..=[`MAX_ITERATIONS`].
    #[error("iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, not {0}")]
    Iterations(i32),
    /// The salted password or the salt is empty or of the wrong length.
    #[error("{0}")]
    Malformed(String),
    /// The operating system gave no randomness for the salt.
    #[error("no randomness for the salt: {0}")]
    Random(String),
}

/// HMAC of `data` under `key` with the mechanism's hash.
pub(crate) fn hmac(mechanism: ScramMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length, so `new_from_slice` cannot fail; an
    // empty answer would only ever fail a comparison.
    match mechanism {
        ScramMechanism::Sha256 => Hmac::<Sha256>::new_from_slice(key)
            .map(|mac| mac.chain_update(data).finalize().into_bytes().to_vec())
            .unwrap_or_default(),
        ScramMechanism::Sha512 => Hmac::<Sha512>::new_from_slice(key)
            .map(|mac| mac.chain_update(data).finalize().into_bytes().to_vec())
            .unwrap_or_default(),
    }
}

/// The mechanism's hash of `data`.
pub(crate) fn hash(mechanism: ScramMechanism, data: &[u8]) -> Vec<u8> {
    match mechanism {
        ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
        ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
    }
}

/// Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC.
fn salted_password(
    mechanism: ScramMechanism,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    let mut out = vec![0u8; mechanism.key_len()];
    match mechanism {
        ScramMechanism::Sha256 => {
            pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out)
        }
        ScramMechanism::Sha512 => {
            pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out)
        }
    }
    out
}

/// The stored and server keys of a salted password (what
/// AlterUserScramCredentials sends: clients salt the password themselves).
pub fn from_salted_password(
    mechanism: ScramMechanism,
    salted: &[u8],
    salt: &[u8],
    iterations: i32,
) -> Result<ScramCredential, CredentialError> {
    check_iterations(iterations)?;
    if salt.is_empty() || salt.len() > 1024 {
        return Err(CredentialError::Malformed(
            "the salt must be 1 to 1024 bytes".into(),
        ));
    }
    if salted.len() != mechanism.key_len() {
        return Err(CredentialError::Malformed(format!(
            "a {} salted password is {} bytes, not {}",
            mechanism.name(),
            mechanism.key_len(),
            salted.len()
        )));
    }
    let client_key = hmac(mechanism, salted, b"Client Key");
    Ok(ScramCredential {
        salt: salt.to_vec(),
        iterations,
        stored_key: hash(mechanism, &client_key),
        server_key: hmac(mechanism, salted, b"Server Key"),
    })
}

fn check_iterations(iterations: i32) -> Result<u32, CredentialError> {
    if (MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
        Ok(iterations.unsigned_abs())
    } else {
        Err(CredentialError::Iterations(iterations))
    }
}

/// A new credential for `password`, under a fresh random salt.
pub fn new_credential(
    mechanism: ScramMechanism,
    password: &str,
    iterations: i32,
) -> Result<ScramCredential, CredentialError> {
    let rounds = check_iterations(iterations)?;
    let mut salt = vec![0u8; SALT_BYTES];
    getrandom::getrandom(&mut salt).map_err(|e| CredentialError::Random(e.to_string()))?;
    let salted = salted_password(mechanism, password.as_bytes(), &salt, rounds);
    from_salted_password(mechanism, &salted, &salt, iterations)
}

/// Whether `password` is the one `credential` was made from: the keys are
/// derived again and the stored key compared in constant time. Stored
/// iterations beyond [`MAX_ITERATIONS`] are refused rather than paid.
pub fn password_matches(
    mechanism: ScramMechanism,
    credential: &ScramCredential,
    password: &str,
) -> bool {
    let Ok(rounds) = u32::try_from(credential.iterations) else {
        return false;
    };
    if rounds == 0 || credential.iterations > MAX_ITERATIONS {
        return false;
    }
    let salted = salted_password(mechanism, password.as_bytes(), &credential.salt, rounds);
    let client_key = hmac(mechanism, &salted, b"Client Key");
    let stored = hash(mechanism, &client_key);
    bool::from(stored.ct_eq(&credential.stored_key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7677_test_vector_keys() {
        // RFC 7677 section 3: user "user", password "pencil", 4096 rounds.
        let salt = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            "W22ZaJ0SNY7soEsUEjb6gQ==",
        )
        .expect("salt");
        let salted = salted_password(ScramMechanism::Sha256, b"pencil", &salt, 4096);
        let credential =
            from_salted_password(ScramMechanism::Sha256, &salted, &salt, 4096).expect("keys");
        assert!(password_matches(
            ScramMechanism::Sha256,
            &credential,
            "pencil"
        ));
        assert!(!password_matches(
            ScramMechanism::Sha256,
            &credential,
            "pencil "
        ));
        // The server signature of the RFC's exchange proves the server key.
        let auth = "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let signature = hmac(
            ScramMechanism::Sha256,
            &credential.server_key,
            auth.as_bytes(),
        );
        assert_eq!(
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn iterations_and_lengths_are_checked() {
        assert!(matches!(
            new_credential(ScramMechanism::Sha512, "pw", 100),
            Err(CredentialError::Iterations(100))
        ));
        assert!(matches!(
            from_salted_password(ScramMechanism::Sha512, &[0; 32], b"salt", 4096),
            Err(CredentialError::Malformed(_))
        ));
        let made = new_credential(ScramMechanism::Sha512, "pw", 4096).expect("credential");
        assert_eq!(made.stored_key.len(), 64);
        assert!(password_matches(ScramMechanism::Sha512, &made, "pw"));
        assert!(!password_matches(ScramMechanism::Sha256, &made, "pw"));
    }
}
