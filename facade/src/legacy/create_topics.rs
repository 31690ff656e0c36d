//! CreateTopics v0–v1. v1 is v2 on the wire; v0 lacks v1's trailing
//! `validate_only`. The answer of v0 is `[name, error]`; v1 adds the error
//! message; neither has v2's throttle time.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, CreateTopicsResponse};

use super::as_version;
use super::wire::{put_array, put_nullable_string, put_string};
use crate::conn::ConnError;

/// Decodes the request with the crate's v2 codec (v0 given `validate_only
/// = false`, which is what it meant).
pub(super) fn decode(version: i16, body: Bytes) -> Result<CreateTopicsRequest, ConnError> {
    let body = if version == 0 {
        let mut v1 = BytesMut::with_capacity(body.len() + 1);
        v1.put_slice(&body);
        v1.put_u8(0);
        v1.freeze()
    } else {
        body
    };
    as_version(ApiKey::CreateTopics, 2, body)
}

/// Writes `[name, error, (v1) message]`.
pub(super) fn encode(version: i16, answer: &CreateTopicsResponse, out: &mut BytesMut) {
    put_array(out, &answer.topics, |out, t| {
        put_string(out, &t.name);
        out.put_i16(t.error_code);
        if version >= 1 {
            put_nullable_string(out, t.error_message.as_deref());
        }
    });
}
