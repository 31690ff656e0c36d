//! Passwords already found correct, so that a repeat skips the PBKDF2
//! derivation: HTTP Basic sends the password with every request, and a
//! derivation costs milliseconds of CPU each time.
//!
//! Nothing here can outlive a change: what is remembered is a MAC over the
//! user, the password *and* the stored credential (salt, iterations,
//! stored key) it matched, and the credential is read from the store on
//! every check, as before. A new password or a deleted user no longer
//! matches any remembered tag. The tags are keyed with this broker's
//! secret, so the set holds no password, nor anything that can be tested
//! against a guess without that secret.

use std::collections::HashSet;
use std::sync::Mutex;

use storage::{ScramCredential, ScramMechanism};

use super::credential;

/// How many tags are kept: past it, the set starts again empty (the next
/// check of each password derives once more).
const MAX_TAGS: usize = 4_096;

/// The tags of (user, password, credential) triples found to match.
pub(crate) struct VerifiedPasswords {
    /// This broker's secret key of the tags, drawn at start-up.
    key: [u8; 32],
    tags: Mutex<HashSet<Vec<u8>>>,
}

impl std::fmt::Debug for VerifiedPasswords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedPasswords").finish_non_exhaustive()
    }
}

impl VerifiedPasswords {
    /// An empty set with a fresh random key.
    pub(crate) fn new() -> Self {
        let mut key = [0u8; 32];
        // Without randomness the tags are only as strong as unsalted
        // hashes of the passwords; they still name the right triples.
        if let Err(e) = getrandom::getrandom(&mut key) {
            tracing::warn!(error = %e, "no randomness for the verified-password key");
        }
        Self::with_key(key)
    }

    /// An empty set keyed with `key`.
    fn with_key(key: [u8; 32]) -> Self {
        Self {
            key,
            tags: Mutex::default(),
        }
    }

    /// The tag of `password` for `user` with `credential`.
    pub(crate) fn tag(
        &self,
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
        credential: &ScramCredential,
    ) -> Vec<u8> {
        let mut data = Vec::with_capacity(64 + user.len() + password.len());
        // Lengths first, so no two triples encode the same.
        for part in [user.as_bytes(), password.as_bytes(), &credential.salt] {
            data.extend_from_slice(&(part.len() as u64).to_be_bytes());
            data.extend_from_slice(part);
        }
        data.extend_from_slice(&credential.iterations.to_be_bytes());
        data.extend_from_slice(&credential.stored_key);
        data.push(mechanism.kafka_type() as u8);
        credential::hmac(ScramMechanism::Sha256, &self.key, &data)
    }

    /// Whether `tag` was remembered.
    pub(crate) fn contains(&self, tag: &[u8]) -> bool {
        self.tags.lock().is_ok_and(|tags| tags.contains(tag))
    }

    /// Remembers `tag`.
    pub(crate) fn insert(&self, tag: Vec<u8>) {
        if let Ok(mut tags) = self.tags.lock() {
            if tags.len() >= MAX_TAGS {
                tags.clear();
            }
            tags.insert(tag);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(stored: u8) -> ScramCredential {
        ScramCredential {
            salt: vec![1; 16],
            iterations: 4096,
            stored_key: vec![stored; 64],
            server_key: vec![0; 64],
        }
    }

    #[test]
    fn a_tag_names_one_user_password_and_credential() {
        let m = ScramMechanism::Sha512;
        let (k, other) = (
            VerifiedPasswords::with_key([1; 32]),
            VerifiedPasswords::with_key([2; 32]),
        );
        let tag = |set: &VerifiedPasswords, user, pw, c: &ScramCredential| set.tag(m, user, pw, c);
        let base = tag(&k, "alice", "pw", &credential(1));
        assert_eq!(base, tag(&k, "alice", "pw", &credential(1)));
        assert_ne!(base, tag(&k, "alice", "pw2", &credential(1)));
        assert_ne!(base, tag(&k, "bob", "pw", &credential(1)));
        assert_ne!(
            base,
            tag(&k, "alice", "pw", &credential(2)),
            "a new password's credential"
        );
        assert_ne!(base, tag(&other, "alice", "pw", &credential(1)));
        // The boundary between user and password is not ambiguous.
        assert_ne!(
            tag(&k, "ab", "c", &credential(1)),
            tag(&k, "a", "bc", &credential(1))
        );
    }

    #[test]
    fn the_set_is_bounded() {
        let verified = VerifiedPasswords::new();
        for i in 0..MAX_TAGS + 1 {
            verified.insert(i.to_be_bytes().to_vec());
        }
        assert!(verified.contains(&MAX_TAGS.to_be_bytes()));
        assert!(!verified.contains(&0usize.to_be_bytes()));
        assert!(verified.tags.lock().unwrap().len() <= MAX_TAGS);
    }
}
