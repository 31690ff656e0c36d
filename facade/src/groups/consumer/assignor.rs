//! The server-side assignors of KIP-848 consumer groups: `uniform` (the
//! default; balanced and sticky) and `range` (contiguous ranges per topic),
//! chosen by the members' `group.remote.assignor`.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// A topic partition: the topic's id and the partition's index.
pub(crate) type TopicPartition = (Uuid, i32);

/// A topic as the assignors see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Topic {
    /// Its Kafka topic id.
    pub(crate) id: Uuid,
    /// Its partition indexes.
    pub(crate) partitions: Vec<i32>,
}

/// The topics of a group's subscriptions, by name.
pub(crate) type Topics = BTreeMap<String, Topic>;

/// The assignors this broker runs; the first is the default.
pub(crate) const ASSIGNORS: &[&str] = &["uniform", "range"];

/// What an assignor knows of one member.
pub(crate) struct Subscriber<'a> {
    /// The member's id.
    pub(crate) id: &'a str,
    /// The topic names it subscribes to.
    pub(crate) topics: &'a BTreeSet<String>,
    /// Its partitions in the previous target assignment (kept where the
    /// balance allows, so fewer partitions move).
    pub(crate) previous: &'a BTreeSet<TopicPartition>,
}

/// The target assignment of `members` over `topics` by `assignor` (an
/// unknown name is the default): member id → its partitions.
pub(crate) fn assign(
    assignor: &str,
    members: &[Subscriber<'_>],
    topics: &Topics,
) -> BTreeMap<String, BTreeSet<TopicPartition>> {
    if assignor == "range" {
        range(members, topics)
    } else {
        uniform(members, topics)
    }
}

/// Each topic's partitions cut into contiguous ranges over its
/// subscribers in member id order, the first ones taking one more.
fn range(
    members: &[Subscriber<'_>],
    topics: &Topics,
) -> BTreeMap<String, BTreeSet<TopicPartition>> {
    let mut out: BTreeMap<String, BTreeSet<TopicPartition>> = members
        .iter()
        .map(|m| (m.id.to_owned(), BTreeSet::new()))
        .collect();
    for (name, topic) in topics {
        let mut subscribers: Vec<&str> = members
            .iter()
            .filter(|m| m.topics.contains(name))
            .map(|m| m.id)
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        subscribers.sort_unstable();
        let mut partitions = topic.partitions.clone();
        partitions.sort_unstable();
        let (each, extra) = (
            partitions.len() / subscribers.len(),
            partitions.len() % subscribers.len(),
        );
        let mut next = partitions.into_iter();
        for (i, id) in subscribers.into_iter().enumerate() {
            let take = each + usize::from(i < extra);
            let mine = out.entry(id.to_owned()).or_default();
            mine.extend(next.by_ref().take(take).map(|p| (topic.id, p)));
        }
    }
    out
}

/// Every partition to one of its topic's subscribers, counts as even as
/// the subscriptions allow: first each member keeps what it had up to its
/// share, then the rest go one by one to the least loaded subscriber.
fn uniform(
    members: &[Subscriber<'_>],
    topics: &Topics,
) -> BTreeMap<String, BTreeSet<TopicPartition>> {
    let mut out: BTreeMap<String, BTreeSet<TopicPartition>> = members
        .iter()
        .map(|m| (m.id.to_owned(), BTreeSet::new()))
        .collect();
    let subscribed_by = |topic: &str| -> Vec<&str> {
        members
            .iter()
            .filter(|m| m.topics.contains(topic))
            .map(|m| m.id)
            .collect()
    };
    let all: Vec<(TopicPartition, Vec<&str>)> = topics
        .iter()
        .flat_map(|(name, t)| {
            let who = subscribed_by(name);
            t.partitions.iter().map(move |&p| ((t.id, p), who.clone()))
        })
        .filter(|(_, who)| !who.is_empty())
        .collect();
    if members.is_empty() || all.is_empty() {
        return out;
    }
    // Shares as if every member subscribed to everything: `floor` each,
    // `ceil` for as many as the remainder.
    let floor = all.len() / members.len();
    let mut ceil_slots = all.len() % members.len();
    let mut free = Vec::new();
    for (tp, who) in &all {
        let keeper = members
            .iter()
            .find(|m| m.previous.contains(tp) && who.contains(&m.id));
        let kept = keeper.is_some_and(|m| {
            let count = out.get(m.id).map_or(0, BTreeSet::len);
            let room = count < floor || (count == floor && ceil_slots > 0);
            if room && count == floor {
                ceil_slots -= 1;
            }
            if room {
                out.entry(m.id.to_owned()).or_default().insert(*tp);
            }
            room
        });
        if !kept {
            free.push((*tp, who));
        }
    }
    for (tp, who) in free {
        let least = who
            .iter()
            .min_by_key(|id| (out.get(**id).map_or(0, BTreeSet::len), **id));
        if let Some(id) = least {
            out.entry((*id).to_owned()).or_default().insert(tp);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics(n: i32) -> Topics {
        let mut t = Topics::new();
        t.insert(
            "t".into(),
            Topic {
                id: Uuid::from_u128(7),
                partitions: (0..n).collect(),
            },
        );
        t
    }

    #[test]
    fn uniform_balances_and_keeps_what_it_can() {
        let subs: BTreeSet<String> = ["t".to_owned()].into();
        let empty = BTreeSet::new();
        let first = uniform(
            &[Subscriber {
                id: "a",
                topics: &subs,
                previous: &empty,
            }],
            &topics(7),
        );
        assert_eq!(first["a"].len(), 7);
        let second = uniform(
            &[
                Subscriber {
                    id: "a",
                    topics: &subs,
                    previous: &first["a"],
                },
                Subscriber {
                    id: "b",
                    topics: &subs,
                    previous: &empty,
                },
                Subscriber {
                    id: "c",
                    topics: &subs,
                    previous: &empty,
                },
            ],
            &topics(7),
        );
        let mut counts: Vec<usize> = second.values().map(BTreeSet::len).collect();
        counts.sort_unstable();
        assert_eq!(counts, vec![2, 2, 3]);
        assert_eq!(second["a"].len(), 3, "a keeps its share");
        assert!(second["a"].is_subset(&first["a"]));
        let every: BTreeSet<_> = second.values().flatten().collect();
        assert_eq!(every.len(), 7, "each partition once");
    }

    #[test]
    fn range_cuts_contiguous_ranges() {
        let subs: BTreeSet<String> = ["t".to_owned()].into();
        let empty = BTreeSet::new();
        let out = range(
            &[
                Subscriber {
                    id: "b",
                    topics: &subs,
                    previous: &empty,
                },
                Subscriber {
                    id: "a",
                    topics: &subs,
                    previous: &empty,
                },
            ],
            &topics(5),
        );
        let parts = |id: &str| out[id].iter().map(|(_, p)| *p).collect::<Vec<_>>();
        assert_eq!(parts("a"), vec![0, 1, 2]);
        assert_eq!(parts("b"), vec![3, 4]);
    }
}
