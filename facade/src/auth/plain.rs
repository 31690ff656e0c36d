//! SASL PLAIN (RFC 4616): `authzid NUL authcid NUL password`. The password
//! is checked against the user's SCRAM credential (see
//! [`super::credential::password_matches`]); none is kept for PLAIN.

/// A parsed PLAIN message.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainMessage {
    /// The user name (authcid).
    pub user: String,
    /// The password in clear.
    pub password: String,
}

impl std::fmt::Debug for PlainMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainMessage")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// Why a PLAIN message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlainError {
    /// Not three NUL-separated UTF-8 fields, or an empty user or password.
    #[error("malformed PLAIN message: {0}")]
    Malformed(&'static str),
    /// The authorization id names someone else (Kafka refuses it too).
    #[error("the authorization id must be empty or the user name")]
    Authzid,
}

/// Parses a PLAIN message.
pub fn parse(message: &[u8]) -> Result<PlainMessage, PlainError> {
    let text = std::str::from_utf8(message).map_err(|_| PlainError::Malformed("not UTF-8"))?;
    let mut fields = text.split('\0');
    let (Some(authzid), Some(user), Some(password), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(PlainError::Malformed("not three NUL-separated fields"));
    };
    if user.is_empty() || password.is_empty() {
        return Err(PlainError::Malformed("empty user name or password"));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(PlainError::Authzid);
    }
    Ok(PlainMessage {
        user: user.to_owned(),
        password: password.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_messages() {
        assert_eq!(
            parse(b"\0alice\0secret").map(|m| (m.user, m.password)),
            Ok(("alice".into(), "secret".into()))
        );
        assert!(parse(b"alice\0alice\0secret").is_ok());
        assert_eq!(parse(b"bob\0alice\0secret"), Err(PlainError::Authzid));
        for bad in [
            &b"alice\0secret"[..],
            b"\0\0secret",
            b"\0alice\0",
            b"\0a\0b\0c",
            b"\0\xff\0x",
        ] {
            assert!(
                matches!(parse(bad), Err(PlainError::Malformed(_))),
                "{bad:?}"
            );
        }
    }
}
