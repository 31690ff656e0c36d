//! Serde helpers for the request fields clients send loosely: a partition id
//! as a number or a string, a status as a string or a boolean, an empty
//! string meaning absent, a field of the wrong type that one route ignores
//! and another refuses with its own words.
//!
//! Request structs keep such fields as [`Loose`] (or read them through the
//! `deserialize_with` functions here), so parsing a well-formed body never
//! fails on a field and each handler answers a wrong type exactly as the
//! API documents. Both [`Loose`] and [`Object`] read through
//! `serde_json::Value`: a repeated key keeps its last value, as it always
//! has, and the value is moved rather than copied as serde's untagged
//! buffering would.
//!
//! That detour costs: a batch of a hundred acknowledgements is a hundred
//! maps built and taken apart again. So a body is first read [`strictly`]:
//! each `T` straight from the bytes, failing on anything the tolerant read
//! would treat specially (another type, a repeated key, an array for an
//! object). Only a body that fails it is read again the tolerant way, so
//! both reads give the same answer.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Error as _, MapAccess, Unexpected, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Number, Value};
use storage::{AckStatus, PartitionId};

/// What a client sent for a field: nothing, `null`, a `T`, or some other
/// JSON. Use it with `#[serde(default)]`.
#[derive(Debug, Default)]
pub(super) enum Loose<T> {
    /// The field is not in the body.
    #[default]
    Absent,
    /// The field is `null`.
    Null,
    /// The field holds a `T`.
    Valid(T),
    /// The field holds JSON that is not a `T`.
    Invalid,
}

thread_local! {
    /// Set while [`strictly`] reads: [`Loose`] and [`Object`] then read
    /// their `T` straight from the input, and fail where they would
    /// otherwise tolerate.
    static STRICT: Cell<bool> = const { Cell::new(false) };
}

/// Runs `read` (a synchronous parse) in strict mode; `None` when it failed
/// there, for the caller to read the tolerant way.
pub(super) fn strictly<T, E>(read: impl FnOnce() -> Result<T, E>) -> Option<T> {
    /// Leaves strict mode however `read` ends.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            STRICT.set(false);
        }
    }
    STRICT.set(true);
    let _leave = Leave;
    read().ok()
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if STRICT.get() {
            return Ok(Option::<T>::deserialize(deserializer)?.map_or(Self::Null, Self::Valid));
        }
        Ok(match Value::deserialize(deserializer)? {
            Value::Null => Self::Null,
            value => T::deserialize(value).map_or(Self::Invalid, Self::Valid),
        })
    }
}

impl<T> Loose<T> {
    /// The value when it is a `T`.
    pub(super) fn valid(self) -> Option<T> {
        match self {
            Self::Valid(v) => Some(v),
            _ => None,
        }
    }

    /// Whether the field is absent or `null`.
    pub(super) fn is_none(&self) -> bool {
        matches!(self, Self::Absent | Self::Null)
    }

    /// `Ok(None)` when absent or `null`, the value when a `T`, `Err(())`
    /// for any other JSON.
    pub(super) fn optional(self) -> Result<Option<T>, ()> {
        match self {
            Self::Absent | Self::Null => Ok(None),
            Self::Valid(v) => Ok(Some(v)),
            Self::Invalid => Err(()),
        }
    }
}

impl Loose<String> {
    /// The text when it is a non-empty string.
    pub(super) fn text(self) -> Option<String> {
        self.valid().filter(|s| !s.is_empty())
    }
}

/// A JSON object read as `T`. Serde would read a JSON array as a struct's
/// fields in order; a request never means that.
#[derive(Debug)]
pub(super) struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if STRICT.get() {
            return deserializer
                .deserialize_map(ObjectVisitor(PhantomData))
                .map(Object);
        }
        match Value::deserialize(deserializer)? {
            object @ Value::Object(_) => {
                T::deserialize(object).map(Object).map_err(D::Error::custom)
            }
            _ => Err(D::Error::custom("expected a JSON object")),
        }
    }
}

/// Reads a `T` from a JSON object only (strict mode of [`Object`]).
struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

/// A partition id as clients send it: a number or a decimal string.
#[derive(Debug)]
pub(super) enum PartitionIdValue {
    /// `"partitionId": 7`.
    Number(Number),
    /// `"partitionId": "7"`: the id the text spells, if any; `blank` when
    /// the text is empty.
    Text {
        id: Option<PartitionId>,
        blank: bool,
    },
}

impl PartitionIdValue {
    /// The id, when the value names one.
    pub(super) fn id(&self) -> Option<PartitionId> {
        match self {
            Self::Number(n) => n.as_i64().map(PartitionId::new),
            Self::Text { id, .. } => *id,
        }
    }

    /// Whether it is the empty string, which clients send for "none".
    pub(super) fn is_blank(&self) -> bool {
        matches!(self, Self::Text { blank: true, .. })
    }
}

// By hand rather than `#[serde(untagged)]`: an untagged enum buffers the
// value and builds an error for every variant it rules out, which for a
// batch of a thousand acknowledgements was a tenth of the broker's time.
// The text is read borrowed where the input allows, never kept.
impl<'de> Deserialize<'de> for PartitionIdValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl Visitor<'_> for Either {
            type Value = PartitionIdValue;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a string")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(PartitionIdValue::Number(v.into()))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(PartitionIdValue::Number(v.into()))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Number::from_f64(v)
                    .map(PartitionIdValue::Number)
                    .ok_or_else(|| E::invalid_value(Unexpected::Float(v), &self))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(PartitionIdValue::Text {
                    id: v.parse().ok(),
                    blank: v.is_empty(),
                })
            }
        }
        deserializer.deserialize_any(Either)
    }
}

/// An acknowledgement's status as clients send it: a name, or a boolean
/// (`true` is completed, `false` failed).
#[derive(Debug)]
pub(super) enum StatusValue {
    /// `"status": "failed"`, read as the status it names.
    Name(AckStatus),
    /// `"status": false`.
    Flag(bool),
}

impl StatusValue {
    /// The status it stands for.
    pub(super) fn status(&self) -> AckStatus {
        match self {
            Self::Name(status) => *status,
            Self::Flag(true) => AckStatus::Completed,
            Self::Flag(false) => AckStatus::Failed,
        }
    }
}

// By hand for the reasons given at `PartitionIdValue`.
impl<'de> Deserialize<'de> for StatusValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl Visitor<'_> for Either {
            type Value = StatusValue;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a boolean")
            }

            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(StatusValue::Flag(v))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StatusValue::Name(AckStatus::parse(v)))
            }
        }
        deserializer.deserialize_any(Either)
    }
}

/// `deserialize_with` for a field read as text only when it is a non-empty
/// string; anything else, of any type, counts as absent.
pub(super) fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(Loose::<String>::deserialize(deserializer)?.text())
}

/// `deserialize_with` for a free-text field that takes any JSON: a string
/// as itself, other JSON as its JSON text; `null` and `""` are absent.
pub(super) fn stringified<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s),
        other => Some(other.to_string()),
    })
}

/// `deserialize_with` for a field whose presence matters even when it is
/// `null`: absent is `None` (with `#[serde(default)]`), `null` is
/// `Some(Value::Null)`.
pub(super) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    struct Probe {
        s: Loose<String>,
        o: Loose<Object<Inner>>,
        #[serde(deserialize_with = "text")]
        t: Option<String>,
        #[serde(deserialize_with = "stringified")]
        e: Option<String>,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    struct Inner {
        a: Loose<i64>,
    }

    fn probe(v: Value) -> Probe {
        serde_json::from_value(v).expect("never fails on an object")
    }

    #[test]
    fn loose_tells_absent_null_valid_and_invalid_apart() {
        assert!(matches!(probe(json!({})).s, Loose::Absent));
        assert!(matches!(probe(json!({"s": null})).s, Loose::Null));
        assert!(matches!(probe(json!({"s": "x"})).s, Loose::Valid(ref s) if s == "x"));
        assert!(matches!(probe(json!({"s": [1]})).s, Loose::Invalid));
    }

    #[test]
    fn objects_are_not_read_from_arrays() {
        assert!(matches!(probe(json!({"o": {"a": 1}})).o, Loose::Valid(_)));
        assert!(matches!(probe(json!({"o": [1]})).o, Loose::Invalid));
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let p: Loose<Object<Probe>> =
            serde_json::from_str(r#"{"s": "a", "s": "b", "o": {"a": 1, "a": 2}}"#).expect("reads");
        let Some(Object(p)) = p.valid() else {
            panic!("an object")
        };
        assert!(matches!(p.s, Loose::Valid(ref s) if s == "b"));
        assert!(matches!(
            p.o,
            Loose::Valid(Object(Inner { a: Loose::Valid(2) }))
        ));
    }

    /// Whatever the strict read accepts, it reads as the tolerant read
    /// does; what it refuses is what only the tolerant read handles.
    #[test]
    fn strict_reads_agree_with_tolerant_ones_or_refuse() {
        let usual = [
            r#"{}"#,
            r#"{"s": "x", "o": {"a": 1}, "t": "y", "e": "z"}"#,
            r#"{"s": null, "o": null, "t": null, "e": null}"#,
            r#"{"s": "", "e": {"k": [1, "two"]}, "other": [1, {"x": 2}]}"#,
            r#"{"o": {"a": null}, "e": 5}"#,
            r#"null"#,
        ];
        let unusual = [
            r#"{"s": 5}"#,
            r#"{"s": "a", "s": "b"}"#,
            r#"{"o": [1]}"#,
            r#"{"o": {"a": "1"}}"#,
            r#"{"o": {"a": 1, "a": 2}}"#,
            r#"{"t": 7}"#,
            r#"[1, 2]"#,
            r#""text""#,
        ];
        let tolerant = |text: &str| {
            let read: Loose<Object<Probe>> = serde_json::from_str(text).expect("reads");
            format!("{read:?}")
        };
        let strict = |text: &str| {
            strictly(|| serde_json::from_str::<Loose<Object<Probe>>>(text))
                .map(|r| format!("{r:?}"))
        };
        for text in usual {
            assert_eq!(strict(text), Some(tolerant(text)), "{text}");
        }
        for text in unusual {
            assert_eq!(strict(text), None, "{text}");
            tolerant(text);
        }
        // Strict mode ends with the read, failed or not.
        assert!(!STRICT.get());
    }

    #[test]
    fn text_and_stringified() {
        assert_eq!(probe(json!({"t": ""})).t, None);
        assert_eq!(probe(json!({"t": 5})).t, None);
        assert_eq!(probe(json!({"t": "x"})).t.as_deref(), Some("x"));
        assert_eq!(probe(json!({"e": ""})).e, None);
        assert_eq!(
            probe(json!({"e": {"k": 1}})).e.as_deref(),
            Some(r#"{"k":1}"#)
        );
    }

    #[test]
    fn partition_ids_and_statuses() {
        let id = |v: Value| serde_json::from_value::<PartitionIdValue>(v).expect("id");
        assert_eq!(id(json!(7)).id(), Some(PartitionId::new(7)));
        assert_eq!(id(json!(" 7 ")).id(), Some(PartitionId::new(7)));
        assert_eq!(id(json!("x")).id(), None);
        assert_eq!(id(json!(1.5)).id(), None);
        assert!(id(json!("")).is_blank());
        let status = |v: Value| serde_json::from_value::<StatusValue>(v).expect("status");
        assert_eq!(status(json!(false)).status(), AckStatus::Failed);
        assert_eq!(status(json!(true)).status(), AckStatus::Completed);
        assert_eq!(status(json!("FAILED")).status(), AckStatus::Failed);
        assert_eq!(status(json!("dlq")).status(), AckStatus::Dlq);
        // Read straight from the text too, as the strict read does.
        let id = |text: &str| serde_json::from_str::<PartitionIdValue>(text).map(|v| v.id());
        assert_eq!(id("7").ok(), Some(Some(PartitionId::new(7))));
        assert_eq!(id(r#""12""#).ok(), Some(Some(PartitionId::new(12))));
        assert_eq!(id("18446744073709551615").ok(), Some(None));
        for other in ["true", "null", "[7]", r#"{"id": 7}"#] {
            assert!(id(other).is_err(), "{other}");
        }
        let status = |text: &str| serde_json::from_str::<StatusValue>(text).map(|v| v.status());
        assert_eq!(status(r#""completed""#).ok(), Some(AckStatus::Completed));
        assert_eq!(status("false").ok(), Some(AckStatus::Failed));
        for other in ["1", "null", r#"["failed"]"#, "{}"] {
            assert!(status(other).is_err(), "{other}");
        }
        // Another type is `Invalid`, never a refused body.
        #[derive(Debug, Default, Deserialize)]
        #[serde(default)]
        struct Item {
            id: Loose<PartitionIdValue>,
            status: Loose<StatusValue>,
        }
        let item: Item = serde_json::from_str(r#"{"id": [1], "status": 2}"#).expect("reads");
        assert!(matches!(item.id, Loose::Invalid));
        assert!(matches!(item.status, Loose::Invalid));
    }
}
