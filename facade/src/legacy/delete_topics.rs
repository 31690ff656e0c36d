//! DeleteTopics v0: v1 on the wire but for the answer, `[name, error]`
//! without v1's throttle time.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::DeleteTopicsResponse;

use super::wire::{put_array, put_nullable_string};

/// Writes `[name, error]`.
pub(super) fn encode(answer: &DeleteTopicsResponse, out: &mut BytesMut) {
    put_array(out, &answer.responses, |out, t| {
        put_nullable_string(out, t.name.as_ref().map(|n| &***n));
        out.put_i16(t.error_code);
    });
}
