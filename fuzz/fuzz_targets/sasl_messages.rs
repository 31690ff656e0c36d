//! Arbitrary bytes as SASL messages a client sends before it is
//! authenticated: a PLAIN message, a SCRAM client-first-message, or a
//! client-final-message answering a server-first (for an unknown user, as
//! an attacker would probe). The first byte picks which.
#![no_main]

use facade::auth::{plain, scram};
use libfuzzer_sys::fuzz_target;
use storage::ScramMechanism;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, message)) = data.split_first() else {
        return;
    };
    match selector % 4 {
        0 => {
            let _ = plain::parse(message);
        }
        1 => {
            let _ = scram::parse_client_first(message);
        }
        n => {
            let mechanism = if n == 2 {
                ScramMechanism::Sha256
            } else {
                ScramMechanism::Sha512
            };
            let Ok(first) = scram::parse_client_first(b"n,,n=fuzz,r=clientnonce") else {
                return;
            };
            let (exchange, _) =
                scram::Exchange::start(mechanism, first, None, b"servernonce", |user| {
                    user.as_bytes().to_vec()
                });
            // An unknown user never authenticates, whatever the proof.
            assert!(exchange.finish(message).is_err());
        }
    }
});
