//! `Authorization: Basic` credentials (RFC 7617): the user name and
//! password of `base64(user ":" password)`, checked against the users of
//! the Kafka door (`queen user`), as SASL PLAIN checks them.

use base64::Engine as _;

/// A user name and password read from a Basic header.
pub(super) struct BasicCredentials {
    /// The user name.
    pub(super) user: String,
    /// The password in clear.
    pub(super) password: String,
}

/// Reads the credentials of a Basic header's parameter.
pub(super) fn parse(encoded: &str) -> Result<BasicCredentials, &'static str> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| "malformed Basic credentials: not base64")?;
    let text = String::from_utf8(raw).map_err(|_| "malformed Basic credentials: not UTF-8")?;
    // The user name cannot hold a colon; the password can.
    let (user, password) = text
        .split_once(':')
        .ok_or("malformed Basic credentials: no colon")?;
    if user.is_empty() || password.is_empty() {
        return Err("malformed Basic credentials: empty user name or password");
    }
    Ok(BasicCredentials {
        user: user.to_owned(),
        password: password.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials() {
        // RFC 7617's example, with a colon in the password.
        let c = parse("QWxhZGRpbjpvcGVuOnNlc2FtZQ==").expect("parsed");
        assert_eq!(
            (c.user.as_str(), c.password.as_str()),
            ("Aladdin", "open:sesame")
        );
        for bad in ["%%%", "bm9jb2xvbg==", "OnB3", "dTo=", "/w=="] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
