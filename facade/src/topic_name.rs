//! Kafka's rule for the name of a topic a Kafka client creates: 1 to 249
//! characters from `[a-zA-Z0-9._-]`, and neither `.` nor `..` (names that
//! must work as directory names in Kafka). Queues created over HTTP may have
//! other names; those are served to Kafka clients as they are, but only a
//! name Kafka accepts is created through this door. Names starting with
//! `__` are the broker's (its internal topics): no client creates one.

/// Whether clients may not create a topic of this name: it is reserved
/// for the broker's internal topics.
pub(crate) fn reserved(name: &str) -> bool {
    storage::offsets_log::is_reserved(name)
}

/// The longest topic name Kafka accepts.
pub(crate) const MAX_LEN: usize = 249;

/// Why `name` is not a legal topic name (in Kafka's words), if it is not.
pub(crate) fn illegal(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("Topic name is illegal, it can't be empty".to_owned());
    }
    if name == "." || name == ".." {
        return Some("Topic name cannot be \".\" or \"..\"".to_owned());
    }
    if name.len() > MAX_LEN {
        return Some(format!(
            "Topic name is illegal, it can't be longer than {MAX_LEN} characters, topic name: {name}"
        ));
    }
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    (!name.chars().all(legal)).then(|| {
        format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII \
             alphanumerics, '.', '_' and '-'"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_names_pass() {
        for name in [
            "a",
            "orders",
            "orders.v2",
            "my_topic-1",
            "__consumer_offsets",
            "...",
        ] {
            assert_eq!(illegal(name), None, "{name}");
        }
        assert_eq!(illegal(&"x".repeat(MAX_LEN)), None);
    }

    #[test]
    fn double_underscore_names_are_reserved() {
        assert!(reserved("__consumer_offsets"));
        assert!(reserved("__anything"));
        assert!(!reserved("_one"));
        assert!(!reserved("a__b"));
    }

    #[test]
    fn illegal_names_are_refused() {
        let too_long = "x".repeat(MAX_LEN + 1);
        for name in [
            "",
            ".",
            "..",
            " with spaces",
            "*",
            "a/b",
            "tópico",
            "a\0b",
            &too_long,
        ] {
            assert!(illegal(name).is_some(), "{name:?}");
        }
    }
}
