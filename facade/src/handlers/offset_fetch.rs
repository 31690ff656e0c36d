//! OffsetFetch: a group's committed offsets (single group up to v7, several
//! from v8), read from the positions native consumer groups share.

use std::collections::HashMap;
use storage::{Access, AclOperation};

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{GroupId, OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::offsets::CommittedOffset;

use crate::broker::Broker;
use crate::error::storage_code;

/// A partition's answer: (index, offset, leader epoch, metadata, error).
type Row = (i32, i64, i32, Option<String>, i16);

/// Answers the committed offsets asked for (all of the group's when the
/// topic list is null); a partition without one answers offset -1.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: OffsetFetchRequest,
    access: &Access,
) -> OffsetFetchResponse {
    if version >= 8 {
        let mut groups = Vec::with_capacity(request.groups.len());
        for g in request.groups {
            let wanted = g.topics.map(|ts| {
                ts.into_iter()
                    .map(|t| (t.name.to_string(), t.partition_indexes))
                    .collect()
            });
            let (topics, error_code) =
                fetch(broker, access, &g.group_id, wanted, request.require_stable).await;
            let topics = topics
                .into_iter()
                .map(|(name, rows)| {
                    OffsetFetchResponseTopics::default()
                        .with_name(TopicName(StrBytes::from_string(name)))
                        .with_partitions(
                            rows.into_iter()
                                .map(|(index, offset, epoch, metadata, error)| {
                                    OffsetFetchResponsePartitions::default()
                                        .with_partition_index(index)
                                        .with_committed_offset(offset)
                                        .with_committed_leader_epoch(epoch)
                                        .with_metadata(metadata.map(StrBytes::from_string))
                                        .with_error_code(error)
                                })
                                .collect(),
                        )
                })
                .collect();
            groups.push(
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id)
                    .with_topics(topics)
                    .with_error_code(error_code),
            );
        }
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let wanted = request.topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.name.to_string(), t.partition_indexes))
            .collect()
    });
    let stable = version >= 7 && request.require_stable;
    let (topics, error_code) = fetch(broker, access, &request.group_id, wanted, stable).await;
    let topics = topics
        .into_iter()
        .map(|(name, rows)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(StrBytes::from_string(name)))
                .with_partitions(
                    rows.into_iter()
                        .map(|(index, offset, epoch, metadata, error)| {
                            let mut p = OffsetFetchResponsePartition::default()
                                .with_partition_index(index)
                                .with_committed_offset(offset)
                                .with_metadata(metadata.map(StrBytes::from_string))
                                .with_error_code(error);
                            if version >= 5 {
                                p.committed_leader_epoch = epoch;
                            }
                            p
                        })
                        .collect(),
                )
        })
        .collect();
    let mut answer = OffsetFetchResponse::default().with_topics(topics);
    if version >= 2 {
        answer.error_code = error_code;
    }
    answer
}

/// The rows of each topic asked for (or of every topic the group has
/// offsets on), and a group-level error code. With `require_stable`, a
/// partition whose offset an ongoing transaction is committing answers
/// UNSTABLE_OFFSET_COMMIT (KIP-447), so the client retries.
async fn fetch(
    broker: &Broker,
    access: &Access,
    group: &GroupId,
    wanted: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
) -> (Vec<(String, Vec<Row>)>, i16) {
    // As Kafka: DESCRIBE on the group, and on each topic answered.
    if !access.group(AclOperation::Describe, group) {
        return (Vec::new(), ResponseError::GroupAuthorizationFailed.code());
    }
    match broker.coordinates(group).await {
        Ok(true) => {}
        Ok(false) => return (Vec::new(), ResponseError::NotCoordinator.code()),
        Err(e) => return (Vec::new(), storage_code(&e)),
    }
    let committed = match broker.engine.committed_offsets(group).await {
        Ok(c) => c,
        Err(e) => return (Vec::new(), storage_code(&e)),
    };
    let pending = if require_stable {
        match broker.engine.pending_txn_offsets(group).await {
            Ok(p) => p,
            Err(e) => return (Vec::new(), storage_code(&e)),
        }
    } else {
        Vec::new()
    };
    let unstable = |name: &str, index: i32| {
        pending
            .iter()
            .any(|(t, i)| t == name && *i == index)
            .then_some((
                index,
                -1,
                -1,
                None,
                ResponseError::UnstableOffsetCommit.code(),
            ))
    };
    let row = |index: i32, c: Option<&CommittedOffset>| -> Row {
        match c {
            Some(c) => (
                index,
                c.offset,
                c.leader_epoch.unwrap_or(-1),
                c.metadata.clone(),
                0,
            ),
            None => (index, -1, -1, Some(String::new()), 0),
        }
    };
    let by_key: HashMap<(&str, i32), &CommittedOffset> = committed
        .iter()
        .map(|o| ((o.topic.as_str(), o.partition), &o.committed))
        .collect();
    match wanted {
        Some(topics) => {
            let answer = topics
                .into_iter()
                .map(|(name, indexes)| {
                    let denied = !access.topic(AclOperation::Describe, &name);
                    let rows = indexes
                        .iter()
                        .map(|&i| match denied {
                            true => (
                                i,
                                -1,
                                -1,
                                None,
                                ResponseError::TopicAuthorizationFailed.code(),
                            ),
                            false => unstable(&name, i).unwrap_or_else(|| {
                                row(i, by_key.get(&(name.as_str(), i)).copied())
                            }),
                        })
                        .collect();
                    (name, rows)
                })
                .collect();
            (answer, 0)
        }
        None => {
            let mut answer: Vec<(String, Vec<Row>)> = Vec::new();
            // Topics the principal may not describe are left out.
            for o in committed
                .iter()
                .filter(|o| access.topic(AclOperation::Describe, &o.topic))
            {
                let r = unstable(&o.topic, o.partition)
                    .unwrap_or_else(|| row(o.partition, Some(&o.committed)));
                match answer.last_mut() {
                    Some((name, rows)) if *name == o.topic => rows.push(r),
                    _ => answer.push((o.topic.clone(), vec![r])),
                }
            }
            (answer, 0)
        }
    }
}
