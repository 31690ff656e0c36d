//! The content of a stored message as the HTTP API renders it.
//!
//! A native message's `data` is its stored JSON, verbatim. A record that
//! came in over Kafka is rendered with the encodings of the Kafka facade
//! spec ("Kafka produce → HTTP pop"), so no byte is changed or dropped:
//! - `data`: the value as JSON when it is valid UTF-8 JSON, `null` for a
//!   null value, otherwise the base64 of its bytes with
//!   `"dataEncoding": "base64"`;
//! - `key`: `null`, the key as a string when valid UTF-8, otherwise base64
//!   with `"keyEncoding": "base64"`;
//! - `headers`: `[{"key", "value"[, "encoding": "base64"]}]` in record
//!   order, duplicates kept, a null value as `null`;
//! - `timestamp`: the record timestamp in milliseconds.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use storage::{Content, KafkaRecord};

/// The `dataEncoding` / `keyEncoding` / `encoding` value of base64 bytes.
const BASE64: &str = "base64";

/// A message's `data`, and its encoding when it is not JSON.
#[derive(Debug)]
pub(super) struct Data {
    /// The JSON to put under `data`.
    pub json: Box<RawValue>,
    /// `Some("base64")` when `json` is a base64 string of raw bytes.
    pub encoding: Option<&'static str>,
}

/// The Kafka-only fields of a popped message.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(super) struct KafkaFields {
    /// The key: null, text, or base64.
    pub key: Option<String>,
    /// `base64` when the key is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_encoding: Option<&'static str>,
    /// The headers, in record order.
    pub headers: Vec<HeaderJson>,
    /// The record timestamp in milliseconds.
    pub timestamp: i64,
}

/// One Kafka header.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(super) struct HeaderJson {
    /// The header name.
    pub key: String,
    /// The value: null, text, or base64.
    pub value: Option<String>,
    /// `base64` when the value is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<&'static str>,
}

/// The `data` of a message.
pub(super) fn data(content: &Content) -> Data {
    match content {
        Content::Json(json) => Data {
            json: raw(json.clone()),
            encoding: None,
        },
        Content::Kafka(k) => match &k.value {
            None => Data {
                json: raw("null".to_owned()),
                encoding: None,
            },
            Some(bytes) => match std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| RawValue::from_string(s.to_owned()).ok())
            {
                Some(json) => Data {
                    json,
                    encoding: None,
                },
                None => Data {
                    json: raw(Value::String(STANDARD.encode(bytes)).to_string()),
                    encoding: Some(BASE64),
                },
            },
        },
    }
}

/// The Kafka-only fields of a message, when it came in over Kafka.
pub(super) fn kafka_fields(content: &Content) -> Option<KafkaFields> {
    let Content::Kafka(KafkaRecord {
        key,
        headers,
        timestamp_ms,
        ..
    }) = content
    else {
        return None;
    };
    let (key, key_encoding) = match key {
        None => (None, None),
        Some(bytes) => {
            let (text, encoding) = text_or_base64(bytes);
            (Some(text), encoding)
        }
    };
    let headers = headers
        .iter()
        .map(|h| {
            let (value, encoding) = match &h.value {
                None => (None, None),
                Some(v) => {
                    let (text, encoding) = text_or_base64(v);
                    (Some(text), encoding)
                }
            };
            HeaderJson {
                key: String::from_utf8_lossy(&h.key).into_owned(),
                value,
                encoding,
            }
        })
        .collect();
    Some(KafkaFields {
        key,
        key_encoding,
        headers,
        timestamp: *timestamp_ms,
    })
}

/// Adds `data` (under `data_key`) and, for a Kafka record, its other
/// fields to a JSON object.
pub(super) fn insert_content(map: &mut Map<String, Value>, data_key: &str, content: &Content) {
    let d = data(content);
    let value = serde_json::from_str(d.json.get()).unwrap_or(Value::Null);
    map.insert(data_key.to_owned(), value);
    if let Some(encoding) = d.encoding {
        map.insert("dataEncoding".into(), Value::from(encoding));
    }
    if let Some(k) = kafka_fields(content) {
        if let Ok(Value::Object(fields)) = serde_json::to_value(k) {
            map.extend(fields);
        }
    }
}

fn text_or_base64(bytes: &[u8]) -> (String, Option<&'static str>) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_owned(), None),
        Err(_) => (STANDARD.encode(bytes), Some(BASE64)),
    }
}

/// Stored JSON as a raw value; stored payloads are valid JSON, so the
/// fallback (`null`) only guards against a damaged row.
fn raw(json: String) -> Box<RawValue> {
    RawValue::from_string(json).unwrap_or_else(|_| null())
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde_json::json;
    use storage::Header;

    use super::*;

    fn kafka(key: Option<&[u8]>, value: Option<&[u8]>, headers: Vec<Header>) -> Content {
        Content::Kafka(KafkaRecord {
            key: key.map(Bytes::copy_from_slice),
            value: value.map(Bytes::copy_from_slice),
            headers,
            timestamp_ms: 1_700_000_000_123,
            txn: None,
        })
    }

    fn rendered(content: &Content) -> Value {
        let mut map = Map::new();
        insert_content(&mut map, "data", content);
        Value::Object(map)
    }

    #[test]
    fn native_data_is_the_stored_json() {
        let v = rendered(&Content::Json(r#"{"a":[1,"é"]}"#.into()));
        assert_eq!(v, json!({"data": {"a": [1, "é"]}}));
    }

    #[test]
    fn a_json_value_is_parsed_and_text_keys_stay_text() {
        let v = rendered(&kafka(Some(b"order-1"), Some(br#"{"n": 1}"#), vec![]));
        assert_eq!(
            v,
            json!({"data": {"n": 1}, "key": "order-1", "headers": [], "timestamp": 1_700_000_000_123_i64})
        );
    }

    #[test]
    fn bytes_that_are_not_json_are_base64() {
        let v = rendered(&kafka(None, Some(&[0xff, 0x00, 0x01]), vec![]));
        assert_eq!(v["data"], "/wAB");
        assert_eq!(v["dataEncoding"], "base64");
        assert_eq!(v["key"], Value::Null);
        assert!(v.get("keyEncoding").is_none());
        // UTF-8 that is not JSON is base64 too: `data` is always JSON or base64.
        let v = rendered(&kafka(None, Some(b"plain text"), vec![]));
        assert_eq!(v["data"], STANDARD.encode("plain text"));
        assert_eq!(v["dataEncoding"], "base64");
    }

    #[test]
    fn a_null_value_is_null_and_binary_keys_are_base64() {
        let v = rendered(&kafka(Some(&[0xc3, 0x28]), None, vec![]));
        assert_eq!(v["data"], Value::Null);
        assert!(v.get("dataEncoding").is_none());
        assert_eq!(v["key"], STANDARD.encode([0xc3, 0x28]));
        assert_eq!(v["keyEncoding"], "base64");
    }

    #[test]
    fn headers_keep_order_duplicates_and_nulls() {
        let h = |k: &'static [u8], v: Option<&'static [u8]>| Header {
            key: Bytes::from_static(k),
            value: v.map(Bytes::from_static),
        };
        let v = rendered(&kafka(
            Some(b""),
            Some(b"1"),
            vec![
                h(b"trace", Some(b"abc")),
                h(b"trace", Some(&[0xfe])),
                h(b"gone", None),
            ],
        ));
        assert_eq!(v["data"], 1);
        assert_eq!(v["key"], "");
        assert_eq!(
            v["headers"],
            json!([
                {"key": "trace", "value": "abc"},
                {"key": "trace", "value": "/g==", "encoding": "base64"},
                {"key": "gone", "value": null},
            ])
        );
    }
}
