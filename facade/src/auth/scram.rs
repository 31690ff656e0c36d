//! The server side of a SCRAM exchange (RFC 5802, RFC 7677): the client's
//! first message is answered with the salt, iterations and a combined
//! nonce; its final message carries a proof, checked against the stored
//! key, and is answered with the server's signature. No channel binding,
//! no extensions (Kafka's `tokenauth` needs delegation tokens).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use storage::{ScramCredential, ScramMechanism};
use subtle::ConstantTimeEq;

use super::credential::{hash, hmac};

/// Why a SCRAM message was refused. Every one ends the exchange with
/// `SASL_AUTHENTICATION_FAILED`; the text says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    /// The message does not follow the RFC's grammar.
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    /// The client asked for channel binding, which is not offered.
    #[error("SCRAM channel binding is not supported")]
    ChannelBinding,
    /// The client sent an extension (delegation tokens among them).
    #[error("SCRAM extension {0:?} is not supported")]
    Extension(String),
    /// The authorization id differs from the user name.
    #[error("the authorization id must be the user name")]
    Authzid,
    /// Unknown user or wrong password: the two are not told apart.
    #[error("Authentication failed during authentication due to invalid credentials with SASL mechanism {0}")]
    InvalidCredentials(&'static str),
}

/// The client's first message, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The GS2 header (`n,,` or `y,,` or with `a=`), echoed in `c=`.
    gs2_header: String,
    /// The user name, `=2C` and `=3D` decoded.
    pub user: String,
    /// The client's nonce.
    nonce: String,
    /// The message without its GS2 header, part of the signed text.
    bare: String,
}

/// Parses a client-first-message.
pub fn parse_client_first(message: &[u8]) -> Result<ClientFirst, ScramError> {
    let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))?;
    let (flag, rest) = text
        .split_once(',')
        .ok_or(ScramError::Malformed("no GS2 header"))?;
    match flag {
        "n" | "y" => {}
        f if f.starts_with("p=") => return Err(ScramError::ChannelBinding),
        _ => return Err(ScramError::Malformed("bad channel binding flag")),
    }
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or(ScramError::Malformed("no GS2 header"))?;
    let authzid = match authzid {
        "" => None,
        a => Some(decode_name(
            a.strip_prefix("a=")
                .ok_or(ScramError::Malformed("bad authorization id"))?,
        )?),
    };
    let gs2_header = text[..text.len() - bare.len()].to_owned();
    let mut attributes = bare.split(',');
    let user = match attributes.next() {
        Some(a) if a.starts_with("m=") => return Err(ScramError::Extension("m".into())),
        Some(a) => decode_name(
            a.strip_prefix("n=")
                .ok_or(ScramError::Malformed("no user name"))?,
        )?,
        None => return Err(ScramError::Malformed("no user name")),
    };
    let nonce = attributes
        .next()
        .and_then(|a| a.strip_prefix("r="))
        .ok_or(ScramError::Malformed("no nonce"))?;
    if nonce.is_empty() || !nonce.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(ScramError::Malformed("bad nonce"));
    }
    if let Some(extension) = attributes.next() {
        let key = extension.split('=').next().unwrap_or_default();
        return Err(ScramError::Extension(key.to_owned()));
    }
    if user.is_empty() {
        return Err(ScramError::Malformed("empty user name"));
    }
    if authzid.is_some_and(|a| a != user) {
        return Err(ScramError::Authzid);
    }
    Ok(ClientFirst {
        gs2_header,
        user,
        nonce: nonce.to_owned(),
        bare: bare.to_owned(),
    })
}

/// A saslname: `=2C` is `,` and `=3D` is `=`; no other `=`, no `,`.
fn decode_name(raw: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find(['=', ',']) {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3);
        match escape {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramError::Malformed("bad escape in a name")),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An exchange between the server's first message and the client's final.
#[derive(Debug)]
pub struct Exchange {
    mechanism: ScramMechanism,
    first: ClientFirst,
    server_first: String,
    nonce: String,
    credential: ScramCredential,
    /// False for a user that does not exist: the exchange runs on a made-up
    /// credential and fails at the proof, as a wrong password does.
    known: bool,
}

impl Exchange {
    /// Answers `first` for `credential` (`None`: no such user) with a
    /// server nonce of `server_nonce` bytes (random); returns the exchange
    /// and the server-first-message. `decoy_salt` is the salt shown for an
    /// unknown user, stable per user so it cannot be told from a real one.
    pub fn start(
        mechanism: ScramMechanism,
        first: ClientFirst,
        credential: Option<ScramCredential>,
        server_nonce: &[u8],
        decoy_salt: impl FnOnce(&str) -> Vec<u8>,
    ) -> (Self, Vec<u8>) {
        let known = credential.is_some();
        let credential = credential.unwrap_or_else(|| ScramCredential {
            salt: decoy_salt(&first.user),
            iterations: super::credential::DEFAULT_ITERATIONS,
            stored_key: vec![0; mechanism.key_len()],
            server_key: vec![0; mechanism.key_len()],
        });
        let nonce = format!("{}{}", first.nonce, B64.encode(server_nonce));
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        let reply = server_first.clone().into_bytes();
        (
            Self {
                mechanism,
                first,
                server_first,
                nonce,
                credential,
                known,
            },
            reply,
        )
    }

    /// The user this exchange authenticates.
    pub fn user(&self) -> &str {
        &self.first.user
    }

    /// Checks the client-final-message; on success, the
    /// server-final-message to send.
    pub fn finish(self, message: &[u8]) -> Result<Vec<u8>, ScramError> {
        let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(ScramError::Malformed("no proof"))?;
        let mut attributes = without_proof.split(',');
        let binding = attributes
            .next()
            .and_then(|a| a.strip_prefix("c="))
            .ok_or(ScramError::Malformed("no channel binding"))?;
        let nonce = attributes
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or(ScramError::Malformed("no nonce"))?;
        if let Some(extension) = attributes.next() {
            let key = extension.split('=').next().unwrap_or_default();
            return Err(ScramError::Extension(key.to_owned()));
        }
        let binding = B64
            .decode(binding)
            .map_err(|_| ScramError::Malformed("channel binding is not base64"))?;
        if binding != self.first.gs2_header.as_bytes() {
            return Err(ScramError::Malformed(
                "channel binding differs from the GS2 header",
            ));
        }
        if nonce != self.nonce {
            return Err(ScramError::Malformed("nonce differs from the server's"));
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| ScramError::Malformed("proof is not base64"))?;
        let failed = ScramError::InvalidCredentials(self.mechanism.name());
        if proof.len() != self.mechanism.key_len() {
            return Err(failed);
        }
        let auth_message = format!(
            "{},{},{}",
            self.first.bare, self.server_first, without_proof
        );
        let signature = hmac(
            self.mechanism,
            &self.credential.stored_key,
            auth_message.as_bytes(),
        );
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        let matches = hash(self.mechanism, &client_key).ct_eq(&self.credential.stored_key);
        if !(bool::from(matches) && self.known) {
            return Err(failed);
        }
        let server_signature = hmac(
            self.mechanism,
            &self.credential.server_key,
            auth_message.as_bytes(),
        );
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::credential::from_salted_password;

    /// RFC 7677 section 3, end to end: the client's messages from the RFC
    /// are accepted and the server's final message is the RFC's.
    #[test]
    fn rfc7677_exchange() {
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt");
        let mut salted = vec![0u8; 32];
        pbkdf2::pbkdf2_hmac::<sha2::Sha256>(b"pencil", &salt, 4096, &mut salted);
        let credential =
            from_salted_password(ScramMechanism::Sha256, &salted, &salt, 4096).expect("keys");
        let first = parse_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").expect("first");
        assert_eq!(first.user, "user");
        // The RFC's server nonce suffix is not base64 of anything; rebuild
        // the exchange with its combined nonce directly.
        let (mut exchange, _) = Exchange::start(
            ScramMechanism::Sha256,
            first,
            Some(credential),
            b"x",
            |_| Vec::new(),
        );
        exchange.nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".into();
        exchange.server_first = format!("r={},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", exchange.nonce);
        let last = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        let answer = exchange.finish(last).expect("accepted");
        assert_eq!(
            answer,
            b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec()
        );
    }

    #[test]
    fn malformed_first_messages_are_refused() {
        for (message, want) in [
            (&b"p=tls-unique,,n=u,r=abc"[..], ScramError::ChannelBinding),
            (
                b"n,,n=u,r=abc,tokenauth=true",
                ScramError::Extension("tokenauth".into()),
            ),
            (b"n,a=other,n=u,r=abc", ScramError::Authzid),
            (
                b"n,,n=u=,r=abc",
                ScramError::Malformed("bad escape in a name"),
            ),
            (b"n,,r=abc", ScramError::Malformed("no user name")),
            (b"n,,n=u", ScramError::Malformed("no nonce")),
            (b"\xff\xfe", ScramError::Malformed("not UTF-8")),
            (b"", ScramError::Malformed("no GS2 header")),
        ] {
            assert_eq!(parse_client_first(message), Err(want), "{message:?}");
        }
        let escaped = parse_client_first(b"y,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=xyz").expect("escapes");
        assert_eq!(escaped.user, "a,b=c");
    }

    #[test]
    fn an_unknown_user_fails_at_the_proof_like_a_wrong_password() {
        let first = parse_client_first(b"n,,n=ghost,r=abc").expect("first");
        let (exchange, reply) =
            Exchange::start(ScramMechanism::Sha512, first, None, b"server", |user| {
                user.as_bytes().to_vec()
            });
        let reply = String::from_utf8(reply).expect("text");
        assert!(reply.starts_with("r=abc"), "{reply}");
        assert!(
            reply.contains(&format!("s={}", B64.encode("ghost"))),
            "{reply}"
        );
        let nonce = format!("abc{}", B64.encode("server"));
        let last = format!("c=biws,r={nonce},p={}", B64.encode([0u8; 64]));
        assert_eq!(
            exchange.finish(last.as_bytes()),
            Err(ScramError::InvalidCredentials("SCRAM-SHA-512"))
        );
    }
}
