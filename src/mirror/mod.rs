//! `queen mirror`: copies topics and consumer-group offsets from a source
//! Kafka cluster, reached as an ordinary client through librdkafka, into
//! this broker's database, every record at its source offset.
//!
//! - [`topics`]: which source topics are mirrored (a list or a regular
//!   expression), each created here with the source's partition count and
//!   its topic-level configs, or given a per-topic error;
//! - [`source`]: the consumer thread that reads the assigned partitions and
//!   hands batches of records (with the consumer's positions) over;
//! - [`groups`]: the selected groups' committed offsets, copied forward;
//! - this file: the loop that writes the batches
//!   ([`storage::Engine::mirror_append`]: progress in the same transaction
//!   as the records, offsets already written skipped) and, every refresh,
//!   follows the source's topics, watermarks and groups.
//!
//! - [`broker_task`]: the same, as a task of the broker (`--mirror-config`),
//!   one broker at a time.
//!
//! Errors of one topic (deleted at the source, a local topic with another
//! partition count, a refused write) are shown in the status of that topic
//! and the others keep mirroring; a source that cannot be reached is shown
//! on every topic until it answers again.

mod broker_task;
mod groups;
mod records;
mod source;
mod topics;

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use rdkafka::ClientConfig;
use storage::{Engine, MirrorWrite, PartitionId};

pub use broker_task::serve;
use source::{Batch, Control, Source};
use topics::Selection;

/// `queen mirror …`, and the broker's `--mirror-config` file (JSON, these
/// fields by name: `{"source": "kafka1:9092", "topics": ["orders"]}`).
#[derive(Debug, Clone, clap::Args, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorArgs {
    /// The source cluster's bootstrap servers (`host:port,…`).
    #[arg(long)]
    pub source: String,
    /// The topics to mirror, separated by commas.
    #[arg(long, value_delimiter = ',')]
    #[serde(default)]
    pub topics: Vec<String>,
    /// A regular expression: every source topic whose whole name matches it
    /// is mirrored, including topics created later.
    #[arg(long)]
    #[serde(default)]
    pub topic_regex: Option<String>,
    /// The consumer groups whose committed offsets are copied, separated by
    /// commas.
    #[arg(long, value_delimiter = ',')]
    #[serde(default)]
    pub groups: Vec<String>,
    /// A librdkafka property for the connections to the source, as
    /// `name=value` (repeatable): `security.protocol`, `sasl.mechanism`,
    /// `sasl.username`, `ssl.ca.location`, …
    #[arg(long = "source-property", value_name = "NAME=VALUE")]
    #[serde(default)]
    pub source_properties: Vec<String>,
    /// How often the source's topics, high watermarks and group offsets
    /// are read again, in milliseconds.
    #[arg(long, default_value_t = DEFAULT_REFRESH_MS)]
    #[serde(default = "default_refresh_ms")]
    pub refresh_ms: u64,
}

/// How often the source is read again unless told otherwise, in ms.
const DEFAULT_REFRESH_MS: u64 = 1000;

fn default_refresh_ms() -> u64 {
    DEFAULT_REFRESH_MS
}

impl MirrorArgs {
    /// The settings in the JSON file at `path`, checked as [`check`] does.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the mirror config {}", path.display()))?;
        let args: Self =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(&text))
                .with_context(|| format!("the mirror config {}", path.display()))?;
        check(&args).with_context(|| format!("the mirror config {}", path.display()))?;
        Ok(args)
    }
}

/// Checks `args` without reaching the source: the selection, the source
/// properties (librdkafka refuses unknown ones) and the groups.
pub fn check(args: &MirrorArgs) -> anyhow::Result<()> {
    let client = client_config(args)?;
    Selection::new(args, &client)?;
    groups::Groups::new(&client, &args.groups)?;
    Ok(())
}

/// What a mirrored partition's writer keeps.
#[derive(Debug, Clone, Copy)]
struct Local {
    id: PartitionId,
    /// The local next offset as last written: the mirror's progress.
    next: i64,
}

/// Runs the mirror until `shutdown` resolves.
pub async fn run(
    engine: Engine,
    args: MirrorArgs,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let client = client_config(&args)?;
    let selection = Selection::new(&args, &client)?;
    let Source {
        mut batches,
        control,
    } = Source::start(&client)?;
    let mut groups = groups::Groups::new(&client, &args.groups)?;
    let mut mirror = Mirror {
        engine,
        source_name: args.source.clone(),
        selection,
        control: control.clone(),
        partitions: HashMap::new(),
        topics: HashMap::new(),
    };
    let mut refresh = tokio::time::interval(Duration::from_millis(args.refresh_ms.max(50)));
    tokio::pin!(shutdown);
    let result = loop {
        tokio::select! {
            () = &mut shutdown => break Ok(()),
            _ = refresh.tick() => {
                mirror.refresh().await;
                groups.copy(&mirror.engine, &mirror.partitions).await;
            }
            batch = batches.recv() => match batch {
                Some(batch) => mirror.write(batch).await,
                None => break Err(anyhow::anyhow!("the source consumer stopped")),
            },
        }
    };
    control.stop();
    result
}

/// The librdkafka settings shared by every connection to the source.
fn client_config(args: &MirrorArgs) -> anyhow::Result<ClientConfig> {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &args.source);
    for property in &args.source_properties {
        let (name, value) = property
            .split_once('=')
            .with_context(|| format!("--source-property {property:?} is not NAME=VALUE"))?;
        config.set(name.trim(), value.trim());
    }
    Ok(config)
}

/// Transactions a batch is written in at once on PostgreSQL, each with
/// its own partitions (SQLite has one writer: one transaction).
const POSTGRES_LANES: usize = 4;

/// The writer's state: the mirrored partitions and topics.
struct Mirror {
    engine: Engine,
    /// The source's name in the status (its bootstrap servers).
    source_name: String,
    selection: Selection,
    /// Tells the source consumer which partitions to read.
    control: Control,
    /// (topic, partition index) → the local partition.
    partitions: HashMap<(String, i32), Local>,
    /// Mirrored topic → its partition count.
    topics: HashMap<String, i32>,
}

impl Mirror {
    /// Writes one batch in one transaction (one commit whatever its
    /// partitions: records, and positions past them that are gaps). If that
    /// is refused it is written partition by partition, so that only the
    /// refusing partition's topic stops: its refusal becomes the topic's
    /// error and the topic leaves the mirror (a topic fenced meanwhile
    /// leaves it without one).
    async fn write(&mut self, batch: Batch) {
        let Batch {
            mut records,
            positions,
        } = batch;
        let (mut keys, mut writes) = (Vec::new(), Vec::new());
        for ((topic, index), local) in &self.partitions {
            let key = (topic.clone(), *index);
            let recs = records.remove(&key).unwrap_or_default();
            let position = positions.get(&key).copied().unwrap_or(0);
            if recs.is_empty() && position <= local.next {
                continue;
            }
            keys.push(key);
            writes.push(MirrorWrite {
                queue: topic.clone(),
                partition_id: local.id,
                records: recs,
                advance_to: position,
            });
        }
        // Records of partitions that left the mirror meanwhile are dropped:
        // their status says why.
        if writes.is_empty() {
            return;
        }
        // Disjoint sets of partitions, one transaction each, written at
        // once where the database has concurrent writers.
        let lanes = if self.engine.backend() == "postgres" {
            POSTGRES_LANES
        } else {
            1
        };
        let mut lane_keys: Vec<Vec<(String, i32)>> = vec![Vec::new(); lanes];
        let mut lane_writes: Vec<Vec<MirrorWrite>> = vec![Vec::new(); lanes];
        for (i, (key, w)) in keys.into_iter().zip(writes).enumerate() {
            lane_keys[i % lanes].push(key);
            lane_writes[i % lanes].push(w);
        }
        let running: Vec<_> = lane_writes
            .into_iter()
            .filter(|w| !w.is_empty())
            .map(|writes| {
                let engine = self.engine.clone();
                tokio::spawn(async move {
                    let done = engine.mirror_append_all(&writes).await;
                    (writes, done)
                })
            })
            .collect();
        let lane_keys = lane_keys.into_iter().filter(|k| !k.is_empty());
        for (keys, lane) in lane_keys.zip(running) {
            match lane.await {
                Ok((_, Ok(done))) => {
                    for (key, d) in keys.iter().zip(done) {
                        self.advanced(key, d.next_offset);
                    }
                }
                Ok((writes, Err(_))) => self.write_each(keys, writes).await,
                Err(e) => {
                    // Its records are lost to this run: the topics stop
                    // rather than go on past a hole.
                    let error = format!("a write failed: {e}");
                    for (topic, _) in keys {
                        if self.topics.contains_key(&topic) {
                            self.stop(&topic, Some(&error)).await;
                        }
                    }
                }
            }
        }
    }

    /// Writes partition by partition; a refused one stops its topic.
    async fn write_each(&mut self, keys: Vec<(String, i32)>, writes: Vec<MirrorWrite>) {
        let mut failed: Vec<(String, String)> = Vec::new();
        for (key, w) in keys.iter().zip(writes) {
            match self
                .engine
                .mirror_append(&w.queue, w.partition_id, w.records, w.advance_to)
                .await
            {
                Ok(done) => self.advanced(key, done.next_offset),
                Err(e) => failed.push((w.queue, e.to_string())),
            }
        }
        if !failed.is_empty() {
            self.drop_fenced().await;
        }
        for (topic, error) in failed {
            if self.topics.contains_key(&topic) {
                self.stop(&topic, Some(&error)).await;
            }
        }
    }

    /// Notes the local next offset of a partition after a write.
    fn advanced(&mut self, key: &(String, i32), next: i64) {
        if let Some(local) = self.partitions.get_mut(key) {
            local.next = next;
        }
    }
}
