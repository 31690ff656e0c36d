//! A reader of the Prometheus text exposition format (0.0.4), written from
//! the format's description rather than from the broker's encoder, so a
//! test that scrapes `/metrics` checks what a Prometheus server would read.
//!
//! It is strict where the broker could go wrong: every sample belongs to a
//! family announced by `# TYPE`, label values are quoted with `\\`, `\"` and
//! `\n` escapes, values are Go floats (`+Inf`, `NaN`), and a series appears
//! once.

use std::collections::{BTreeMap, HashMap};

/// A series' labels, sorted by name.
pub(crate) type Labels = Vec<(String, String)>;

/// A parsed scrape: each series' value, and each family's type.
#[derive(Debug, Default)]
pub(crate) struct Scrape {
    /// (sample name, sorted labels) → value.
    pub series: BTreeMap<(String, Labels), f64>,
    /// Family name → `counter`, `gauge`, `histogram`, …
    pub types: HashMap<String, String>,
}

impl Scrape {
    /// Parses `text`, panicking with the line at fault.
    pub(crate) fn parse(text: &str) -> Self {
        let mut scrape = Self::default();
        for (n, line) in text.lines().enumerate() {
            let at = |what: &str| format!("line {}: {what}: {line:?}", n + 1);
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest
                    .split_once(' ')
                    .unwrap_or_else(|| panic!("{}", at("TYPE")));
                assert!(
                    scrape.types.insert(name.into(), kind.into()).is_none(),
                    "{}",
                    at("a family typed twice")
                );
                continue;
            }
            if line.starts_with('#') {
                continue; // HELP and comments
            }
            let (name, labels, value) = sample(line).unwrap_or_else(|| panic!("{}", at("sample")));
            let family = family_of(&name, &scrape.types)
                .unwrap_or_else(|| panic!("{}", at("a sample of no typed family")));
            assert!(!family.is_empty());
            let value = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                "NaN" => f64::NAN,
                v => v.parse().unwrap_or_else(|_| panic!("{}", at("value"))),
            };
            assert!(
                scrape.series.insert((name, labels), value).is_none(),
                "{}",
                at("a series twice")
            );
        }
        scrape
    }

    /// The value of the series `name` whose labels include `labels`, summed
    /// over the series that match (0 when none does).
    pub(crate) fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).map(|(_, v)| v).sum()
    }

    /// Every series `name` whose labels include `labels`.
    pub(crate) fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&str, &str)],
    ) -> impl Iterator<Item = (&'a Labels, f64)> + 'a {
        self.series
            .iter()
            .filter(move |((n, ls), _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| ls.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|((_, ls), v)| (ls, *v))
    }

    /// The value of the one series `name` with exactly `labels`.
    pub(crate) fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut key: Labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        key.sort();
        self.series.get(&(name.to_owned(), key)).copied()
    }
}

/// The family a sample belongs to: its own name, or the name without a
/// histogram's or summary's suffix.
fn family_of<'a>(name: &'a str, types: &HashMap<String, String>) -> Option<&'a str> {
    if types.contains_key(name) {
        return Some(name);
    }
    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
        let base = name.strip_suffix(suffix)?;
        matches!(
            types.get(base).map(String::as_str),
            Some("histogram" | "summary")
        )
        .then_some(base)
    })
}

/// Splits `name{a="b",…} value` into its parts, unescaping label values.
fn sample(line: &str) -> Option<(String, Labels, &str)> {
    let name_end = line.find(['{', ' '])?;
    let name = &line[..name_end];
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(mut inner) = rest.strip_prefix('{') {
        loop {
            if let Some(after) = inner.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = inner.find('=')?;
            let key = inner[..eq].trim_start_matches(',').to_owned();
            let mut chars = inner[eq + 1..].strip_prefix('"')?.char_indices();
            let mut value = String::new();
            let end = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        c @ ('\\' | '"') => value.push(c),
                        _ => return None,
                    },
                    (_, c) => value.push(c),
                }
            };
            labels.push((key, value));
            inner = &inner[eq + 1 + 1 + end + 1..];
            inner = inner.strip_prefix(',').unwrap_or(inner);
        }
    }
    labels.sort();
    let value = rest.trim();
    (!value.is_empty() && !value.contains(' ')).then_some((name.to_owned(), labels, value))
}

#[test]
fn samples_are_read_with_escapes_and_braces() {
    let text = "# TYPE x_total counter\n\
                x_total{route=\"/q/{queue}\",a=\"say \\\"hi\\\"\\\\\"} 3\n\
                # TYPE h histogram\n\
                h_bucket{le=\"+Inf\"} 2\nh_sum 1.5\nh_count 2\n";
    let s = Scrape::parse(text);
    assert_eq!(
        s.get("x_total", &[("route", "/q/{queue}"), ("a", "say \"hi\"\\")]),
        Some(3.0)
    );
    assert_eq!(s.get("h_bucket", &[("le", "+Inf")]), Some(2.0));
    assert_eq!(s.sum("h_count", &[]), 2.0);
}
