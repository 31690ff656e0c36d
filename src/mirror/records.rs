//! A source record as this broker stores it: key, value, headers and
//! timestamp byte for byte, at its source offset.

use bytes::Bytes;
use rdkafka::message::{BorrowedMessage, Headers, Message};
use storage::{Content, Header, KafkaRecord, MirroredRecord, Record};
use uuid::Uuid;

/// The record `message` carries, at its offset, stored as `message_id`.
pub(super) fn convert(message: &BorrowedMessage<'_>, message_id: Uuid) -> MirroredRecord {
    let headers = message
        .headers()
        .map(|h| {
            h.iter()
                .map(|h| Header {
                    key: Bytes::copy_from_slice(h.key.as_bytes()),
                    value: h.value.map(Bytes::copy_from_slice),
                })
                .collect()
        })
        .unwrap_or_default();
    MirroredRecord {
        offset: message.offset(),
        record: Record {
            message_id,
            transaction_id: None,
            trace_id: None,
            producer_sub: None,
            content: Content::Kafka(KafkaRecord {
                key: message.key().map(Bytes::copy_from_slice),
                value: message.payload().map(Bytes::copy_from_slice),
                headers,
                timestamp_ms: message.timestamp().to_millis().unwrap_or(-1),
                txn: None,
            }),
        },
    }
}
