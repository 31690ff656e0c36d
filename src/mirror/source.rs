//! The source consumer: a thread of its own (librdkafka's poll blocks)
//! reading the assigned partitions (`assign`, no group membership, nothing
//! committed at the source) and handing batches to the writer.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use storage::MirroredRecord;
use tokio::sync::mpsc;

use super::records::convert;

/// The most records in one batch.
const BATCH_RECORDS: usize = 20_000;
/// The most payload bytes in one batch.
const BATCH_BYTES: usize = 16 << 20;
/// Batches read ahead of the writer.
const BATCHES_AHEAD: usize = 2;

/// Records read from the source, by (topic, partition index), in offset
/// order, with the consumer's positions after them: every source offset
/// below a position was delivered (or is a gap).
#[derive(Debug, Default)]
pub(super) struct Batch {
    pub(super) records: HashMap<(String, i32), Vec<MirroredRecord>>,
    pub(super) positions: HashMap<(String, i32), i64>,
}

/// A change of the consumer's assignment.
#[derive(Debug)]
enum Change {
    Assign(Vec<(String, i32, i64)>),
    Unassign(Vec<(String, i32)>),
}

/// Steers the consumer thread.
#[derive(Debug, Clone, Default)]
pub(super) struct Control {
    changes: Arc<Mutex<Vec<Change>>>,
    stop: Arc<AtomicBool>,
}

impl Control {
    /// Starts reading these (topic, index) partitions at these offsets.
    pub(super) fn assign(&self, partitions: Vec<(String, i32, i64)>) {
        self.push(Change::Assign(partitions));
    }

    /// Stops reading these partitions.
    pub(super) fn unassign(&self, partitions: Vec<(String, i32)>) {
        self.push(Change::Unassign(partitions));
    }

    /// Ends the thread.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    fn push(&self, change: Change) {
        if let Ok(mut changes) = self.changes.lock() {
            changes.push(change);
        }
    }

    fn take(&self) -> Vec<Change> {
        self.changes
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }
}

/// The running consumer: its batches and its control.
pub(super) struct Source {
    pub(super) batches: mpsc::Receiver<Batch>,
    pub(super) control: Control,
}

impl Source {
    /// Starts the consumer thread with nothing assigned.
    pub(super) fn start(client: &ClientConfig) -> anyhow::Result<Self> {
        let mut client = client.clone();
        if client.get("fetch.queue.backoff.ms").is_none() {
            // The mirror empties a full fetch queue (`queued.min.messages`,
            // 100,000 records of all partitions) in tens of milliseconds;
            // librdkafka would wait a second before fetching again (its
            // default since 2.4), and the mirror with it.
            client.set("fetch.queue.backoff.ms", "10");
        }
        let consumer: BaseConsumer = client
            // Never used for membership or commits: positions are local.
            .set("group.id", "queen-mirror")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            // Past the source's log start (DeleteRecords, retention): go on
            // from its first record; the offsets between are gaps.
            .set("auto.offset.reset", "earliest")
            // Aborted transactions' records are gaps, as Kafka's readers see them.
            .set("isolation.level", "read_committed")
            .create()
            .context("the source consumer")?;
        let (sender, batches) = mpsc::channel(BATCHES_AHEAD);
        let control = Control::default();
        let steer = control.clone();
        std::thread::Builder::new()
            .name("mirror-source".into())
            .spawn(move || consume(&consumer, &steer, &sender))
            .context("the source consumer thread")?;
        Ok(Self { batches, control })
    }
}

fn consume(consumer: &BaseConsumer, control: &Control, sender: &mpsc::Sender<Batch>) {
    while !control.stop.load(Ordering::Relaxed) {
        for change in control.take() {
            if let Err(e) = apply(consumer, change) {
                tracing::error!(error = %e, "mirror: cannot change the source assignment");
            }
        }
        let mut batch = Batch::default();
        // librdkafka hands over a fetched partition's records one after
        // another: they gather in `run` while the partition stays the same,
        // so a record costs a comparison, not a map lookup of its key.
        let mut run: Option<Run> = None;
        let (mut count, mut bytes) = (0, 0);
        // Minted for the whole batch at once, as the Kafka produce path
        // does: one clock read and lock per batch rather than per record.
        let mut ids = storage::new_message_ids(BATCH_RECORDS);
        let mut wait = Duration::from_millis(100);
        while count < BATCH_RECORDS && bytes < BATCH_BYTES {
            let Some(polled) = consumer.poll(wait) else {
                break;
            };
            wait = Duration::ZERO;
            match polled {
                Ok(message) => {
                    let id = ids.next().unwrap_or_else(storage::new_message_id);
                    let record = convert(&message, id);
                    count += 1;
                    bytes += record.record.encoded_len();
                    let (topic, index) = (message.topic(), message.partition());
                    match &mut run {
                        Some(r) if r.index == index && r.topic == topic => r.records.push(record),
                        _ => {
                            if let Some(done) = run.take() {
                                done.add_to(&mut batch);
                            }
                            run = Some(Run {
                                topic: topic.to_owned(),
                                index,
                                records: vec![record],
                            });
                        }
                    }
                }
                Err(KafkaError::PartitionEOF(_)) => {}
                Err(e) => tracing::debug!(error = %e, "mirror: source consumer"),
            }
        }
        if let Some(done) = run {
            done.add_to(&mut batch);
        }
        if let Ok(positions) = consumer.position() {
            for e in positions.elements() {
                if let Offset::Offset(o) = e.offset() {
                    batch
                        .positions
                        .insert((e.topic().to_owned(), e.partition()), o);
                }
            }
        }
        if (count > 0 || !batch.positions.is_empty()) && sender.blocking_send(batch).is_err() {
            return;
        }
        if count == 0 {
            // Nothing came: the positions were sent; wait before the next look.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Consecutive records of one partition.
struct Run {
    topic: String,
    index: i32,
    records: Vec<MirroredRecord>,
}

impl Run {
    /// Adds the run's records to the partition's in `batch`.
    fn add_to(self, batch: &mut Batch) {
        match batch.records.entry((self.topic, self.index)) {
            Entry::Occupied(mut e) => e.get_mut().extend(self.records),
            Entry::Vacant(e) => {
                e.insert(self.records);
            }
        }
    }
}

fn apply(consumer: &BaseConsumer, change: Change) -> rdkafka::error::KafkaResult<()> {
    let mut list = TopicPartitionList::new();
    match change {
        Change::Assign(partitions) => {
            // librdkafka learns an assigned topic's leaders only at its next
            // periodic metadata refresh (up to a second away): asking for
            // the topic's metadata first lets the fetches start at once.
            let topics: std::collections::BTreeSet<&str> =
                partitions.iter().map(|(t, _, _)| t.as_str()).collect();
            for topic in topics {
                consumer.fetch_metadata(Some(topic), super::topics::SOURCE_TIMEOUT)?;
            }
            for (topic, index, offset) in partitions {
                list.add_partition_offset(&topic, index, Offset::Offset(offset))?;
            }
            consumer.incremental_assign(&list)
        }
        Change::Unassign(partitions) => {
            for (topic, index) in partitions {
                list.add_partition(&topic, index);
            }
            consumer.incremental_unassign(&list)
        }
    }
}
