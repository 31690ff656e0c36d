//! A subscription by regular expression (KIP-848's `SubscribedTopicRegex`):
//! it matches whole topic names, as Kafka's RE2/J patterns do.

use regex_automata::meta::Regex;

/// A compiled topic pattern, compared by its text.
#[derive(Debug, Clone)]
pub(crate) struct Subscription {
    pattern: String,
    regex: Regex,
}

impl Subscription {
    /// Compiles `pattern`, anchored at both ends; the error says why it
    /// is not a valid expression.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let regex = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| e.to_string())?;
        Ok(Self {
            pattern: pattern.to_owned(),
            regex,
        })
    }

    /// The pattern as the member gave it.
    pub(crate) fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the whole of `topic` matches.
    pub(crate) fn matches(&self, topic: &str) -> bool {
        self.regex.is_match(topic)
    }
}

impl PartialEq for Subscription {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_whole_names_only() {
        let s = Subscription::new("orders-.*").expect("valid");
        assert!(s.matches("orders-eu"));
        assert!(!s.matches("old-orders-eu"));
        assert!(Subscription::new("^anchored$")
            .expect("valid")
            .matches("anchored"));
        assert!(Subscription::new("(unclosed").is_err());
    }
}
