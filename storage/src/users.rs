//! Users of the Kafka door: SCRAM credentials per user and mechanism,
//! shared by every broker on the database. Only what RFC 5802 lets a
//! server keep is stored (salt, iterations, stored key, server key); the
//! keys are derived by the caller, so the password never reaches here.

use crate::Engine;

/// The SCRAM mechanisms a credential can be kept for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256 (RFC 7677).
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramMechanism {
    /// Both mechanisms, in Kafka's numbering order.
    pub const ALL: [Self; 2] = [Self::Sha256, Self::Sha512];

    /// The SASL mechanism name, as clients ask for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "SCRAM-SHA-256",
            Self::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism with SASL name `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Kafka's number for the mechanism (`ScramMechanism` in the
    /// Describe/AlterUserScramCredentials APIs).
    pub fn kafka_type(self) -> i8 {
        match self {
            Self::Sha256 => 1,
            Self::Sha512 => 2,
        }
    }

    /// The mechanism with Kafka number `n`.
    pub fn from_kafka_type(n: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.kafka_type() == n)
    }

    /// The length of the hash, and so of the stored and server keys.
    pub fn key_len(self) -> usize {
        match self {
            Self::Sha256 => 32,
            Self::Sha512 => 64,
        }
    }
}

/// One user's credential for one mechanism.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// The random salt the password was salted with.
    pub salt: Vec<u8>,
    /// PBKDF2 iterations.
    pub iterations: i32,
    /// H(ClientKey): what a client proof is checked against.
    pub stored_key: Vec<u8>,
    /// HMAC(SaltedPassword, "Server Key"): signs the server's final message.
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramCredential {
    // The keys are password equivalents for a replay: keep them out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// A user and the mechanisms it has credentials for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// Each mechanism with its iteration count, by mechanism.
    pub mechanisms: Vec<(ScramMechanism, i32)>,
}

/// Why a user operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// The user name is empty, too long, or holds a control character.
    #[error("invalid user name: {0}")]
    InvalidName(String),
    /// The credential is malformed (empty salt, keys of the wrong length,
    /// iterations out of range).
    #[error("invalid credential: {0}")]
    InvalidCredential(String),
    /// The stored row names a mechanism this broker does not know.
    #[error("stored credential of {user:?} has unknown mechanism {mechanism:?}")]
    UnknownStoredMechanism {
        /// The user.
        user: String,
        /// The stored name.
        mechanism: String,
    },
    /// The database failed.
    #[error(transparent)]
    Storage(#[from] crate::StorageError),
}

impl From<sqlx::Error> for UserError {
    fn from(e: sqlx::Error) -> Self {
        Self::Storage(e.into())
    }
}

/// The longest user name kept, in bytes (Kafka sets no limit; a principal
/// is logged and compared, so keep it reasonable).
pub const MAX_USER_NAME_BYTES: usize = 255;

/// Checks a user name: non-empty, at most [`MAX_USER_NAME_BYTES`], no
/// control characters (they would forge log lines and principals).
pub fn validate_user_name(name: &str) -> Result<(), UserError> {
    if name.is_empty() {
        return Err(UserError::InvalidName("empty".into()));
    }
    if name.len() > MAX_USER_NAME_BYTES {
        return Err(UserError::InvalidName(format!(
            "longer than {MAX_USER_NAME_BYTES} bytes"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(UserError::InvalidName(format!(
            "{name:?} contains a control character"
        )));
    }
    Ok(())
}

fn validate_credential(
    mechanism: ScramMechanism,
    credential: &ScramCredential,
) -> Result<(), UserError> {
    let bad = |what: String| Err(UserError::InvalidCredential(what));
    if credential.salt.is_empty() {
        return bad("empty salt".into());
    }
    if credential.iterations < 1 {
        return bad(format!("{} iterations", credential.iterations));
    }
    let want = mechanism.key_len();
    if credential.stored_key.len() != want || credential.server_key.len() != want {
        return bad(format!("{} keys must be {want} bytes", mechanism.name()));
    }
    Ok(())
}

impl Engine {
    /// Creates or replaces `user`'s credential for `mechanism`.
    pub async fn put_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: &ScramCredential,
    ) -> Result<(), UserError> {
        validate_user_name(user)?;
        validate_credential(mechanism, credential)?;
        let now = self.inner.clock.now_ms();
        crate::sql::users::put(&self.inner.store, user, mechanism.name(), credential, now).await
    }

    /// `user`'s credential for `mechanism`, if there is one.
    pub async fn scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Result<Option<ScramCredential>, UserError> {
        crate::sql::users::get(&self.inner.store, user, mechanism.name()).await
    }

    /// Deletes `user`'s credential for `mechanism`; whether there was one.
    pub async fn delete_scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Result<bool, UserError> {
        crate::sql::users::delete(&self.inner.store, user, Some(mechanism.name())).await
    }

    /// Deletes every credential of `user`; whether there was any.
    pub async fn delete_user(&self, user: &str) -> Result<bool, UserError> {
        crate::sql::users::delete(&self.inner.store, user, None).await
    }

    /// Users with at least one credential, by name; only `names` when given.
    pub async fn users(&self, names: Option<&[String]>) -> Result<Vec<UserInfo>, UserError> {
        let rows = crate::sql::users::list(&self.inner.store).await?;
        let mut users: Vec<UserInfo> = Vec::new();
        for row in rows {
            let (name, mechanism, iterations) = (row.username, row.mechanism, row.iterations);
            if names.is_some_and(|wanted| !wanted.contains(&name)) {
                continue;
            }
            let Some(m) = ScramMechanism::from_name(&mechanism) else {
                return Err(UserError::UnknownStoredMechanism {
                    user: name,
                    mechanism,
                });
            };
            match users.last_mut() {
                Some(last) if last.name == name => last.mechanisms.push((m, iterations)),
                _ => users.push(UserInfo {
                    name,
                    mechanisms: vec![(m, iterations)],
                }),
            }
        }
        Ok(users)
    }
}
