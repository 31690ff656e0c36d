//! The selected consumer groups' committed offsets, copied from the source
//! (OffsetFetch, without joining the group) into the group of the same
//! name here, which Kafka and native consumers share.
//!
//! An offset is copied only when it is ahead of the one stored here: once
//! a consumer has moved to this broker and commits here, the source's
//! older commit never takes it back.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use storage::offsets::CommittedOffset;
use storage::Engine;

use super::topics::SOURCE_TIMEOUT;
use super::Local;

/// A consumer per group, used for OffsetFetch only.
pub(super) struct Groups {
    groups: Vec<(String, Arc<BaseConsumer>)>,
}

impl Groups {
    pub(super) fn new(client: &ClientConfig, names: &[String]) -> anyhow::Result<Self> {
        let groups = names
            .iter()
            .map(|name| {
                let consumer: BaseConsumer = client
                    .clone()
                    .set("group.id", name)
                    .set("enable.auto.commit", "false")
                    .create()
                    .with_context(|| format!("the offset reader of group {name}"))?;
                Ok((name.clone(), Arc::new(consumer)))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { groups })
    }

    /// Copies each group's source commits on the mirrored partitions that
    /// are ahead of the local ones.
    pub(super) async fn copy(
        &mut self,
        engine: &Engine,
        partitions: &HashMap<(String, i32), Local>,
    ) {
        if partitions.is_empty() {
            return;
        }
        for (group, consumer) in &self.groups {
            if let Err(e) = copy_group(engine, group, consumer.clone(), partitions).await {
                tracing::warn!(group, error = %format!("{e:#}"), "mirror: group offsets not copied");
            }
        }
    }
}

async fn copy_group(
    engine: &Engine,
    group: &str,
    consumer: Arc<BaseConsumer>,
    partitions: &HashMap<(String, i32), Local>,
) -> anyhow::Result<()> {
    let mut list = TopicPartitionList::new();
    for (topic, index) in partitions.keys() {
        list.add_partition(topic, *index);
    }
    let committed =
        tokio::task::spawn_blocking(move || consumer.committed_offsets(list, SOURCE_TIMEOUT))
            .await?
            .context("OffsetFetch at the source")?;
    let local: HashMap<(String, i32), i64> = engine
        .committed_offsets(group)
        .await?
        .into_iter()
        .map(|o| ((o.topic, o.partition), o.committed.offset))
        .collect();
    let mut commits = Vec::new();
    for e in committed.elements() {
        let Offset::Offset(offset) = e.offset() else {
            continue; // nothing committed at the source
        };
        let key = (e.topic().to_owned(), e.partition());
        let Some(target) = partitions.get(&key) else {
            continue;
        };
        if local.get(&key).is_some_and(|&here| here >= offset) {
            continue;
        }
        let metadata = e.metadata();
        commits.push((
            target.id,
            CommittedOffset {
                offset,
                metadata: (!metadata.is_empty()).then(|| metadata.to_owned()),
                leader_epoch: None,
            },
        ));
    }
    if !commits.is_empty() {
        tracing::debug!(
            group,
            partitions = commits.len(),
            "mirror: group offsets copied"
        );
        engine.commit_offsets(group, &commits).await?;
    }
    Ok(())
}
