//! Which source topics are mirrored, and each one's local twin: created
//! with the source's partition count and topic-level configs, registered as
//! mirrored (local producers refused until the fence), assigned to the
//! source consumer at the local next offsets.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use rdkafka::admin::{AdminClient, AdminOptions, ConfigSource, ResourceSpecifier};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::ClientConfig;
use regex::Regex;
use storage::topic_configs;
use storage::TopicCreation;

use super::{Local, Mirror, MirrorArgs};

/// How long one request to the source may take.
pub(super) const SOURCE_TIMEOUT: Duration = Duration::from_secs(5);

/// The topics asked for, and what came of them.
pub(super) struct Selection {
    names: HashSet<String>,
    pattern: Option<Regex>,
    /// Topics stopped for an error that a retry would not cure (another
    /// partition count here, a config refused): left alone until restart.
    given_up: HashSet<String>,
    /// Whether the last look at the source failed (every topic shows it).
    unreachable: bool,
    /// The source's metadata and watermarks are read through this consumer.
    meta: Arc<BaseConsumer<LastError>>,
    admin: AdminClient<DefaultClientContext>,
}

impl Selection {
    pub(super) fn new(args: &MirrorArgs, client: &ClientConfig) -> anyhow::Result<Self> {
        let pattern = args
            .topic_regex
            .as_deref()
            .map(|r| Regex::new(&format!("^(?:{r})$")))
            .transpose()
            .context("--topic-regex")?;
        anyhow::ensure!(
            !args.topics.is_empty() || pattern.is_some(),
            "queen mirror needs --topics or --topic-regex"
        );
        Ok(Self {
            names: args.topics.iter().cloned().collect(),
            pattern,
            given_up: HashSet::new(),
            unreachable: false,
            meta: Arc::new(
                client
                    .create_with_context(LastError::default())
                    .context("the source metadata client")?,
            ),
            admin: client.create().context("the source admin client")?,
        })
    }

    fn wants(&self, topic: &str) -> bool {
        !topic.starts_with("__")
            && (self.names.contains(topic)
                || self.pattern.as_ref().is_some_and(|p| p.is_match(topic)))
    }
}

/// The metadata client's context: it keeps librdkafka's last global error
/// (a refused authentication, a failed TLS handshake), which says why the
/// source cannot be reached where the failed request only says that it
/// cannot.
#[derive(Debug, Default)]
struct LastError(Mutex<Option<String>>);

impl LastError {
    /// The last cause, kept while the source stays unreachable (librdkafka
    /// does not repeat an error it has just reported).
    fn get(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets the cause once the source answers again.
    fn clear(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl ClientContext for LastError {
    fn error(&self, error: KafkaError, reason: &str) {
        tracing::error!(%error, reason, "mirror: the source");
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // "All brokers are down" follows the error that took them down,
        // which is the one worth showing.
        let consequence = error.rdkafka_error_code() == Some(RDKafkaErrorCode::AllBrokersDown);
        if !(consequence && last.is_some()) {
            *last = Some(format!("{error}: {reason}"));
        }
    }
}

impl ConsumerContext for LastError {}

impl Mirror {
    /// Follows the source: starts the topics that appeared, stops those
    /// gone, reports the high watermarks.
    pub(super) async fn refresh(&mut self) {
        let meta = self.selection.meta.clone();
        let listed = tokio::task::spawn_blocking(move || {
            let listed = meta.fetch_metadata(None, SOURCE_TIMEOUT).map(|m| {
                m.topics()
                    .iter()
                    .filter(|t| t.error().is_none())
                    .map(|t| (t.name().to_owned(), t.partitions().len() as i32))
                    .collect::<HashMap<String, i32>>()
            });
            // librdkafka hands its global errors (the cause of a failure)
            // to the context only when the client is polled.
            if listed.is_err() {
                let _ = meta.poll(Duration::ZERO);
            }
            listed
        })
        .await;
        let source: HashMap<String, i32> = match listed {
            Ok(Ok(topics)) => {
                self.selection.meta.context().clear();
                topics
            }
            Ok(Err(e)) => {
                let error = match self.selection.meta.context().get() {
                    Some(cause) => format!("{e}; {cause}"),
                    None => e.to_string(),
                };
                return self.unreachable(&error).await;
            }
            Err(e) => return self.unreachable(&e.to_string()).await,
        };
        if std::mem::take(&mut self.selection.unreachable) {
            for topic in self.reachability_shown_by() {
                let _ = self
                    .engine
                    .set_mirror_error(&topic, &self.source_name, None)
                    .await;
            }
        }
        let gone: Vec<String> = self
            .topics
            .keys()
            .filter(|t| !source.contains_key(*t))
            .cloned()
            .collect();
        for topic in gone {
            self.stop(&topic, Some("the topic no longer exists at the source"))
                .await;
        }
        self.drop_fenced().await;
        let grown: Vec<(String, i32)> = self
            .topics
            .iter()
            .filter_map(|(t, here)| source.get(t).filter(|n| *n > here).map(|n| (t.clone(), *n)))
            .collect();
        for (topic, partitions) in grown {
            if let Err(e) = self.grow(&topic, partitions).await {
                let error = format!("partitions added at the source not mirrored: {e:#}");
                self.stop(&topic, Some(&error)).await;
            }
        }
        let mut new: Vec<(&String, &i32)> = source
            .iter()
            .filter(|(t, _)| {
                self.selection.wants(t)
                    && !self.topics.contains_key(*t)
                    && !self.selection.given_up.contains(*t)
            })
            .collect();
        new.sort();
        for (topic, partitions) in new {
            if let Err(e) = self.start(topic, *partitions).await {
                self.selection.given_up.insert(topic.clone());
                let error = format!("{e:#}");
                tracing::warn!(topic, error, "mirror: topic not mirrored");
                let _ = self
                    .engine
                    .set_mirror_error(topic, &self.source_name, Some(&error))
                    .await;
            }
        }
        self.report_watermarks().await;
    }

    /// Shows that the source cannot be reached on every mirrored topic.
    async fn unreachable(&mut self, error: &str) {
        self.selection.unreachable = true;
        let error = format!("the source cannot be reached: {error}");
        tracing::warn!(error, "mirror");
        for topic in self.reachability_shown_by() {
            let _ = self
                .engine
                .set_mirror_error(&topic, &self.source_name, Some(&error))
                .await;
        }
    }

    /// The topics whose status shows whether the source can be reached: the
    /// ones being copied, and those named in `--topics` and not started yet,
    /// so that a source never listed (one that refuses the mirror's
    /// credentials) is explained in the status rather than leaving it empty.
    fn reachability_shown_by(&self) -> Vec<String> {
        let waiting = self
            .selection
            .names
            .iter()
            .filter(|t| !self.topics.contains_key(*t) && !self.selection.given_up.contains(*t));
        self.topics.keys().chain(waiting).cloned().collect()
    }

    /// Creates (or finds) the local twin of `topic` and starts copying it.
    async fn start(&mut self, topic: &str, partitions: i32) -> anyhow::Result<()> {
        let mut local = match self.engine.queue(topic).await? {
            Some(q) => q,
            None => {
                let options = self.source_configs(topic).await?;
                if self
                    .engine
                    .create_topic(topic, partitions, &options)
                    .await?
                    == TopicCreation::Created
                {
                    tracing::info!(topic, partitions, "mirror: topic created");
                }
                self.engine
                    .queue(topic)
                    .await?
                    .context("the topic was deleted as it was created")?
            }
        };
        // A topic mirrored before (the mirror restarted) may have gained
        // partitions at the source meanwhile: they are added here too.
        if (local.partitions.len() as i32) < partitions && self.mirrored_before(topic).await? {
            local = self.add_partitions(topic, partitions).await?;
        }
        anyhow::ensure!(
            local.partitions.len() as i32 == partitions,
            "the local topic has {} partitions, the source's {partitions}: delete it here or give it the same count",
            local.partitions.len()
        );
        if self
            .engine
            .register_mirror(topic, &self.source_name)
            .await?
        {
            tracing::info!(topic, "mirror: topic fenced, not mirrored");
            self.selection.given_up.insert(topic.to_owned());
            return Ok(());
        }
        self.engine
            .set_mirror_error(topic, &self.source_name, None)
            .await?;
        self.copy_partitions(topic, &local).await?;
        self.topics.insert(topic.to_owned(), partitions);
        tracing::info!(topic, partitions, "mirror: copying");
        Ok(())
    }

    /// Follows a mirrored topic that has `partitions` partitions at the
    /// source now, more than before: adds them here (as Kafka's
    /// CreatePartitions does) and copies them.
    async fn grow(&mut self, topic: &str, partitions: i32) -> anyhow::Result<()> {
        let local = self.add_partitions(topic, partitions).await?;
        self.copy_partitions(topic, &local).await?;
        self.topics.insert(topic.to_owned(), partitions);
        tracing::info!(
            topic,
            partitions,
            "mirror: partitions added at the source copied"
        );
        Ok(())
    }

    /// Gives local `topic` `partitions` partitions unless it has them (a
    /// mirror of another broker may have added them); the topic afterwards.
    async fn add_partitions(
        &self,
        topic: &str,
        partitions: i32,
    ) -> anyhow::Result<storage::QueueInfo> {
        let local = self
            .engine
            .queue(topic)
            .await?
            .context("the local topic was deleted")?;
        if local.partitions.len() as i32 >= partitions {
            return Ok(local);
        }
        self.engine.create_partitions(topic, partitions).await?;
        self.engine
            .queue(topic)
            .await?
            .context("the local topic was deleted")
    }

    /// Whether `topic` is mirrored here already and not fenced.
    async fn mirrored_before(&self, topic: &str) -> anyhow::Result<bool> {
        Ok(self
            .engine
            .mirror_status()
            .await?
            .iter()
            .any(|t| t.topic == topic && !t.fenced))
    }

    /// Starts copying the partitions of local `topic` not copied yet, each
    /// from its local next offset.
    async fn copy_partitions(
        &mut self,
        topic: &str,
        local: &storage::QueueInfo,
    ) -> anyhow::Result<()> {
        let mut assign = Vec::new();
        for p in &local.partitions {
            let key = (topic.to_owned(), p.kafka_index);
            if self.partitions.contains_key(&key) {
                continue;
            }
            let next = self.engine.log_bounds(p.id).await?.next_offset;
            self.partitions.insert(key, Local { id: p.id, next });
            assign.push((topic.to_owned(), p.kafka_index, next));
        }
        self.control.assign(assign);
        Ok(())
    }

    /// The options of a new local topic: the source topic's topic-level
    /// configs that differ from the default (DescribeConfigs); configs this
    /// broker does not know are logged and left out.
    async fn source_configs(&self, topic: &str) -> anyhow::Result<storage::QueueOptions> {
        let described = self
            .selection
            .admin
            .describe_configs(
                &[ResourceSpecifier::Topic(topic)],
                &AdminOptions::new().request_timeout(Some(SOURCE_TIMEOUT)),
            )
            .await
            .context("DescribeConfigs at the source")?;
        let mut configs = Vec::new();
        for result in described {
            let resource = result.map_err(|e| anyhow::anyhow!("DescribeConfigs: {e}"))?;
            for entry in resource.entries {
                if entry.is_default || entry.source != ConfigSource::DynamicTopic {
                    continue;
                }
                // `queen.<option>`: a queen source's native options come along too.
                if topic_configs::find(&entry.name).is_none() && !entry.name.starts_with("queen.") {
                    tracing::warn!(
                        topic,
                        config = entry.name,
                        "mirror: config not known here, left out"
                    );
                    continue;
                }
                configs.push((entry.name, entry.value));
            }
        }
        topic_configs::for_new_topic(&configs)
            .with_context(|| format!("the source's configs {configs:?}"))
    }

    /// Stops mirroring `topic`, showing `error` (if any) in its status.
    pub(super) async fn stop(&mut self, topic: &str, error: Option<&str>) {
        if let Some(error) = error {
            tracing::warn!(topic, error, "mirror: topic stopped");
            if let Err(e) = self
                .engine
                .set_mirror_error(topic, &self.source_name, Some(error))
                .await
            {
                tracing::error!(topic, error = %e, "mirror: cannot store the topic's error");
            }
        }
        let partitions: Vec<(String, i32)> = self
            .partitions
            .keys()
            .filter(|(t, _)| t == topic)
            .cloned()
            .collect();
        self.control.unassign(partitions);
        self.topics.remove(topic);
        self.partitions.retain(|(t, _), _| t != topic);
        self.selection.given_up.insert(topic.to_owned());
    }

    /// Stops, without an error, the topics fenced meanwhile.
    pub(super) async fn drop_fenced(&mut self) {
        let Ok(status) = self.engine.mirror_status().await else {
            return;
        };
        let fenced: Vec<String> = status
            .into_iter()
            .filter(|t| t.fenced && self.topics.contains_key(&t.topic))
            .map(|t| t.topic)
            .collect();
        for topic in fenced {
            tracing::info!(topic, "mirror: topic fenced, no longer copied");
            self.stop(&topic, None).await;
        }
    }

    /// Stores the source's high watermark of every mirrored partition.
    async fn report_watermarks(&mut self) {
        let partitions: Vec<(String, i32)> = self.partitions.keys().cloned().collect();
        let meta = self.selection.meta.clone();
        let read = tokio::task::spawn_blocking(move || {
            partitions
                .into_iter()
                .map(|(topic, index)| {
                    let high = meta
                        .fetch_watermarks(&topic, index, SOURCE_TIMEOUT)
                        .map(|(_, high)| high);
                    (topic, index, high)
                })
                .collect::<Vec<_>>()
        })
        .await;
        let Ok(read) = read else { return };
        let mut by_topic: HashMap<String, Vec<(i32, i64)>> = HashMap::new();
        for (topic, index, high) in read {
            match high {
                Ok(high) => by_topic.entry(topic).or_default().push((index, high)),
                Err(e) => tracing::debug!(topic, index, error = %e, "mirror: no watermark"),
            }
        }
        for (topic, watermarks) in by_topic {
            if let Err(e) = self
                .engine
                .report_source_watermarks(&topic, &watermarks)
                .await
            {
                tracing::warn!(topic, error = %e, "mirror: cannot store the watermarks");
            }
        }
    }
}
