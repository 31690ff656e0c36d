//! Fetch: reads from any offset, as a real long poll.
//!
//! When less than `min_bytes` is available the request waits for the
//! engine's append notification, its topic's when it fetches one topic
//! (no polling loop; appends through other brokers on PostgreSQL notify
//! too) until `max_wait_ms`. Fetch sessions (KIP-227) are refused
//! correctly: a session is never created (the answer's session id is 0, so
//! clients keep sending full requests) and an incremental request gets
//! `FETCH_SESSION_ID_NOT_FOUND`.
//!
//! The records a fetch gathers hold room of the broker's in-flight budget
//! (twice what the fetch may answer: the records read and their encoding)
//! from the first partition with records until the answer is written; a
//! fetch that finds nothing, or waits, holds none.
//!
//! `read_committed` (isolation level 1) reads up to the last stable offset
//! (the first offset of the oldest open transaction) and lists the aborted
//! transactions among what it returns, so clients drop their records;
//! `read_uncommitted` reads up to the high watermark and never looks at
//! transactions.

use std::time::Duration;
use storage::{Access, AclOperation};

use bytes::BytesMut;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, ProducerId, TopicName};
use kafka_protocol::ResponseError;
use storage::{PartitionId, StorageError, StoredRecords};
use telemetry::{Door, TRAFFIC};
use tokio::sync::OwnedSemaphorePermit;
use uuid::Uuid;

use crate::broker::Broker;
use crate::error::storage_code;
use crate::metrics::KAFKA;
use crate::records::{BatchWriter, Outgoing, TimestampType, Written};

/// The longest a fetch may wait, whatever it asks.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// One partition of the request, resolved.
struct Wanted {
    topic: usize,
    index: i32,
    partition_id: Result<PartitionId, i16>,
    offset: i64,
    max_bytes: usize,
    times: TimestampType,
}

/// Answers with what is available from each requested offset, waiting up
/// to `max_wait_ms` for `min_bytes`; with the room of the in-flight budget
/// its records hold until the answer is written, if it has any.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: FetchRequest,
    access: &Access,
) -> (FetchResponse, Option<OwnedSemaphorePermit>) {
    if version >= 7 && request.session_id != 0 {
        let refused =
            FetchResponse::default().with_error_code(ResponseError::FetchSessionIdNotFound.code());
        return (refused, None);
    }

    let mut topics: Vec<(Option<String>, TopicName, Uuid)> = Vec::new();
    let mut wanted = Vec::new();
    for topic in &request.topics {
        let name = if version >= 13 {
            broker.topic_name(topic.topic_id).await.ok().flatten()
        } else {
            Some(topic.topic.to_string())
        };
        // The topic's `message.timestamp.type`, cached with its produce rules.
        let times = match &name {
            Some(name) if access.topic(AclOperation::Read, name) => broker
                .produce_rules(name)
                .await
                .map(|rules| rules.timestamp_type())
                .map_err(|e| storage_code(&e)),
            _ => Ok(TimestampType::Create),
        };
        for p in &topic.partitions {
            let partition_id = match &name {
                None => Err(ResponseError::UnknownTopicId.code()),
                Some(name) if !access.topic(AclOperation::Read, name) => {
                    Err(ResponseError::TopicAuthorizationFailed.code())
                }
                Some(name) => match broker.partition_id(name, p.partition, false).await {
                    Ok(Some(id)) => times.map(|_| id),
                    Ok(None) => Err(ResponseError::UnknownTopicOrPartition.code()),
                    Err(e) => Err(storage_code(&e)),
                },
            };
            wanted.push(Wanted {
                topic: topics.len(),
                index: p.partition,
                partition_id,
                offset: p.fetch_offset,
                max_bytes: usize::try_from(p.partition_max_bytes).unwrap_or(0),
                times: times.unwrap_or(TimestampType::Create),
            });
        }
        topics.push((name, topic.topic.clone(), topic.topic_id));
    }

    // A fetch of one topic (a consumer's usual case) sleeps on that topic's
    // appends alone: woken by every append anywhere, a consumer keeping up
    // with a quiet topic read it again after each batch of a busy one.
    let appended = match topics.as_slice() {
        [(Some(name), _, _)] => broker.engine.appended_in(name),
        _ => broker.engine.appended_anywhere(),
    };
    let wait = Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0)).min(MAX_WAIT);
    let start = tokio::time::Instant::now();
    let deadline = start + wait;
    let min_bytes = usize::try_from(request.min_bytes).unwrap_or(0);
    let max_bytes = usize::try_from(request.max_bytes)
        .unwrap_or(usize::MAX)
        .min(broker.fetch_answer_limit());
    let read_committed = request.isolation_level == 1;
    // What one pass may gather: its records, read and written.
    let partition_bytes = wanted
        .iter()
        .map(|w| w.max_bytes)
        .fold(0, usize::saturating_add);
    let charge = max_bytes.min(partition_bytes).saturating_mul(2);
    let pass = Pass {
        max_bytes,
        read_committed,
        charge,
    };
    loop {
        // Armed before reading, so an append landing meanwhile still wakes us.
        let notified = appended.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let read = read_all(broker, version, &wanted, pass).await;
        let expired = tokio::time::Instant::now() >= deadline;
        if read.bytes >= min_bytes || read.full || read.failed || expired {
            return answer(version, &topics, &wanted, read, start, wait);
        }
        // Sleep until something is appended (here or, on PostgreSQL, on
        // another broker), or the deadline.
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            let read = read_all(broker, version, &wanted, pass).await;
            return answer(version, &topics, &wanted, read, start, wait);
        }
    }
}

/// How a pass over the wanted partitions reads.
#[derive(Debug, Clone, Copy)]
struct Pass {
    /// The request's `max_bytes`.
    max_bytes: usize,
    /// Whether it reads committed records only.
    read_committed: bool,
    /// The in-flight budget the pass takes once it finds records.
    charge: usize,
}

/// What one pass over the wanted partitions read.
struct Read {
    /// Each partition's answer.
    partitions: Vec<PartitionData>,
    /// The record bytes gathered.
    bytes: usize,
    /// The records gathered.
    records: usize,
    /// Whether any partition failed.
    failed: bool,
    /// Whether the answer's `max_bytes` (or the broker's limit below it)
    /// left records out: it is as full as it can get, so a `min_bytes`
    /// above it is met.
    full: bool,
    /// The room of the in-flight budget the records hold, once any were read.
    held: Option<Room>,
}

/// The room of the in-flight budget a pass's records hold.
struct Room {
    permit: OwnedSemaphorePermit,
    /// The record bytes the room allows the pass (about half of it: the
    /// records are held read and encoded).
    bytes: usize,
}

impl Room {
    /// Whether it is a small room of the reserve, not the pass's charge.
    fn is_small(&self) -> bool {
        self.bytes != usize::MAX
    }
}

/// A fetch that lacks at most this many records of a partition is near its
/// head: it first takes a small room of the budget, when one is free at
/// once, and reads what fits in it; only when the records do not fit does
/// it wait for its full charge and read again. Without that, a consumer
/// keeping up with a stream waited for its charge in turn behind a bulk
/// producer's megabyte requests, that is for their commits. A fetch
/// further behind takes its full charge at once (its records would not
/// fit the small room).
const NEAR_HEAD_RECORDS: i64 = 1024;

/// Reads every wanted partition.
async fn read_all(broker: &Broker, version: i16, wanted: &[Wanted], pass: Pass) -> Read {
    let Pass {
        max_bytes,
        read_committed,
        ..
    } = pass;
    let mut held = None;
    let mut total = 0;
    let mut records = 0;
    let mut failed = false;
    let mut full = false;
    let mut out = Vec::with_capacity(wanted.len());
    for w in wanted {
        let mut data = PartitionData::default().with_partition_index(w.index);
        if read_committed {
            data.aborted_transactions = Some(Vec::new());
        }
        match w.partition_id {
            Err(code) => {
                data.error_code = code;
                failed = true;
            }
            Ok(partition_id) => {
                let budget = Budget {
                    bytes: w.max_bytes.min(max_bytes.saturating_sub(total)),
                    at_least_one: total == 0,
                    read: total,
                };
                let at = Position {
                    partition_id,
                    offset: w.offset,
                    times: w.times,
                };
                match read_one(broker, version, at, budget, pass, &mut held, data.clone()).await {
                    Ok(filled) => {
                        total += filled.bytes;
                        records += filled.records;
                        full |= filled.more && budget.bytes < w.max_bytes;
                        data = filled.data;
                    }
                    Err(e) => {
                        data.error_code = storage_code(&e);
                        failed = true;
                    }
                }
                if data.error_code != 0 {
                    failed = true;
                }
            }
        }
        out.push(data);
    }
    Read {
        partitions: out,
        bytes: total,
        records,
        failed,
        full,
        held,
    }
}

/// What [`read_one`] answers for a partition.
struct Filled {
    data: PartitionData,
    /// The record bytes written.
    bytes: usize,
    /// The records written.
    records: usize,
    /// Whether records below the partition's upper bound were left out.
    more: bool,
}

/// Where a partition is read from.
#[derive(Debug, Clone, Copy)]
struct Position {
    partition_id: PartitionId,
    offset: i64,
    /// The timestamp type its batches state.
    times: TimestampType,
}

/// What one partition's records may take of the answer.
#[derive(Debug, Clone, Copy)]
struct Budget {
    /// The partition's `partition_max_bytes`, within what the request's
    /// `max_bytes` has left.
    bytes: usize,
    /// The first partition with data gets its first record whatever its
    /// size (KIP-74), so a consumer never stalls on a record larger than
    /// its limits; every other partition stays within `bytes`.
    at_least_one: bool,
    /// The record bytes the pass read before this partition.
    read: usize,
}

async fn read_one(
    broker: &Broker,
    version: i16,
    at: Position,
    budget: Budget,
    pass: Pass,
    held: &mut Option<Room>,
    mut data: PartitionData,
) -> Result<Filled, StorageError> {
    let Position {
        partition_id,
        offset,
        times,
    } = at;
    let read_committed = pass.read_committed;
    let bounds = broker.engine.log_bounds(partition_id).await?;
    data.high_watermark = bounds.next_offset;
    let upper = match read_committed {
        true => bounds.last_stable,
        false => bounds.next_offset,
    };
    data.last_stable_offset = upper;
    if version >= 5 {
        data.log_start_offset = bounds.log_start;
    }
    if offset < bounds.log_start || offset > bounds.next_offset {
        data.error_code = ResponseError::OffsetOutOfRange.code();
        return Ok(Filled {
            data,
            bytes: 0,
            records: 0,
            more: false,
        });
    }
    let mut records = BytesMut::new();
    let mut count = 0;
    let mut more = offset < upper;
    let mut budget = budget;
    if (budget.bytes > 0 || budget.at_least_one) && offset < upper {
        let wanted = usize::try_from(upper - offset).unwrap_or(usize::MAX);
        // Taken once per pass, before the first records are read, and
        // traded for the whole charge at most once: a pass waits for budget
        // holding at most a small room.
        let near_head = upper - offset <= NEAR_HEAD_RECORDS;
        if held.is_none() {
            *held = Some(take_room(broker, pass.charge, near_head).await);
        } else if !near_head && held.as_ref().is_some_and(Room::is_small) {
            // Far behind after a near partition: its records would not fit.
            *held = Some(take_room(broker, pass.charge, false).await);
        }
        let limit = budget.bytes;
        let written = loop {
            let room = held.as_ref().map_or(usize::MAX, |r| r.bytes);
            budget.bytes = limit.min(room.saturating_sub(budget.read));
            let stored = broker
                .engine
                .read_partition(partition_id, offset, wanted, budget.bytes.max(1))
                .await?;
            let (encoded, written) = encode_within(&stored, times, budget, upper)?;
            records = encoded;
            let whole = written.last_offset.is_some_and(|last| last + 1 >= upper);
            if whole || budget.bytes >= limit || !held.as_ref().is_some_and(Room::is_small) {
                break written;
            }
            // The small room cut the answer short: the whole charge, in
            // turn, and the partition read again, so that the answer is
            // what it would have been without the small room.
            *held = Some(take_room(broker, pass.charge, false).await);
        };
        count = written.records;
        more = written.last_offset.is_none_or(|last| last + 1 < upper);
        // Only records of a transaction can be of an aborted one.
        let transactional = read_committed && written.transactional;
        if let Some(last) = written.last_offset.filter(|_| transactional) {
            let aborted = broker
                .engine
                .aborted_transactions(partition_id, offset, last + 1)
                .await?;
            data.aborted_transactions = Some(
                aborted
                    .into_iter()
                    .map(|a| {
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(a.producer_id))
                            .with_first_offset(a.first_offset)
                    })
                    .collect(),
            );
        }
    }
    let bytes = records.len();
    data.records = Some(records.freeze());
    Ok(Filled {
        data,
        bytes,
        records: count,
        more,
    })
}

/// The batches of the stored records below `upper` that fit the budget,
/// written straight from storage, and what they hold. Storage reads by
/// stored size, and a record's written size differs from it (a native
/// message's ids become headers), so the writer stops at the first record
/// that would not fit.
fn encode_within(
    stored: &[StoredRecords],
    times: TimestampType,
    budget: Budget,
    upper: i64,
) -> Result<(BytesMut, Written), StorageError> {
    let read: usize = stored.iter().map(StoredRecords::stored_len).sum();
    let mut out = BytesMut::with_capacity(read.min(budget.bytes));
    let mut writer = BatchWriter::new(&mut out, times, budget.bytes, budget.at_least_one);
    'segments: for segment in stored {
        for record in segment.iter() {
            let (offset, view) = record?;
            let outgoing = Outgoing::stored(offset, segment.created_at_ms, &view);
            if offset >= upper || !writer.push(&outgoing) {
                break 'segments;
            }
        }
    }
    let written = writer.finish();
    Ok((out, written))
}

/// Builds the answer from the last read, and counts what it delivers and,
/// for a long poll (`max_wait_ms` > 0), how long it took.
fn answer(
    version: i16,
    topics: &[(Option<String>, TopicName, Uuid)],
    wanted: &[Wanted],
    read: Read,
    start: tokio::time::Instant,
    wait: Duration,
) -> (FetchResponse, Option<OwnedSemaphorePermit>) {
    let traffic = TRAFFIC.door(Door::Kafka);
    traffic.records_out.inc_by(read.records as u64);
    traffic.bytes_out.inc_by(read.bytes as u64);
    if !wait.is_zero() {
        traffic
            .long_poll_seconds
            .observe(start.elapsed().as_secs_f64());
    }
    let partitions = read.partitions;
    let mut responses: Vec<FetchableTopicResponse> = topics
        .iter()
        .map(|(_, name, id)| {
            let mut t = FetchableTopicResponse::default();
            if version >= 13 {
                t.topic_id = *id;
            } else {
                t.topic = name.clone();
            }
            t
        })
        .collect();
    for (w, data) in wanted.iter().zip(partitions) {
        KAFKA.partition_error(ApiKey::Fetch, data.error_code);
        responses[w.topic].partitions.push(data);
    }
    (
        FetchResponse::default().with_responses(responses),
        read.held.map(|room| room.permit),
    )
}

/// The room a pass's records will hold: a small one at once when the pass
/// is `near_head` and one is free, else its whole `charge` in turn.
async fn take_room(broker: &Broker, charge: usize, near_head: bool) -> Room {
    if near_head {
        if let Some((permit, bytes)) = broker.small_answer_budget() {
            return Room {
                permit,
                bytes: bytes / 2,
            };
        }
    }
    Room {
        permit: broker.answer_budget(charge).await,
        bytes: usize::MAX,
    }
}
