//! ShareFetch (KIP-932): within a share session, acknowledges the records
//! the request carries acknowledgements for, then acquires new records
//! for the member from the session's partitions (native pops of the
//! group, leased for `share.record.lock.duration.ms`), waiting up to
//! `max_wait_ms` when there are none.
//!
//! Session epochs: 0 opens a session (no acknowledgements allowed), -1
//! closes it after its acknowledgements (nothing is fetched and what the
//! member still holds is released), any other must be the session's next.
//! A wrong epoch, an unknown session or member changes nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::share_fetch_response::{
    LeaderIdAndEpoch, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::{ShareFetchRequest, ShareFetchResponse};
use kafka_protocol::ResponseError;
use storage::Access;

use crate::broker::Broker;
use crate::groups::share::SessionPartition;
use crate::share::acknowledge::{self, Batch};
use crate::share::acquire::acquire;
use crate::share::config::ShareConfig;
use crate::share::release::release;
use crate::share::target::Targets;
use crate::share::{Caller, Refusal};

/// Records per fetch when the request names no positive `max_records`.
const DEFAULT_MAX_RECORDS: usize = 500;
/// The most records one fetch acquires.
const MAX_RECORDS: usize = 10_000;
/// The longest a fetch waits for records.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// Answers one ShareFetch.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: ShareFetchRequest,
    access: &Access,
) -> ShareFetchResponse {
    crate::share::answer(serve(broker, request, access).await)
}

async fn serve(
    broker: &Broker,
    request: ShareFetchRequest,
    access: &Access,
) -> Result<ShareFetchResponse, Refusal> {
    let caller = crate::share::identify(
        broker,
        access,
        request.group_id.as_ref().map(|g| g.as_str()),
        request.member_id.as_ref().map(|m| m.as_str()),
    )
    .await?;
    let epoch = request.share_session_epoch;
    let acks = request.topics.iter().any(|t| {
        t.partitions
            .iter()
            .any(|p| !p.acknowledgement_batches.is_empty())
    });
    if epoch == 0 && acks {
        return Err((
            ResponseError::InvalidRequest,
            "acknowledgements cannot open a share session".into(),
        ));
    }
    // Every batch is checked before anything changes.
    let mut batches: BTreeMap<SessionPartition, Vec<(i64, i8)>> = BTreeMap::new();
    for t in &request.topics {
        for p in &t.partitions {
            if p.acknowledgement_batches.is_empty() {
                continue;
            }
            let list: Vec<Batch<'_>> = p
                .acknowledgement_batches
                .iter()
                .map(|b| (b.first_offset, b.last_offset, &b.acknowledge_types[..]))
                .collect();
            let offsets = acknowledge::expand_partition(p.partition_index, &list)?;
            batches.insert((t.topic_id, p.partition_index), offsets);
        }
    }
    let asked: Vec<SessionPartition> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index))
        })
        .collect();
    let forgotten: Vec<SessionPartition> = request
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
        .collect();
    let session: Vec<SessionPartition> = caller.in_session(broker, epoch, |m| {
        match epoch {
            0 => m.open_session(),
            -1 => m.has_session()?,
            e => {
                m.advance_session(e)?;
            }
        }
        let Some(s) = m.session.as_mut() else {
            return Ok(Vec::new());
        };
        s.partitions.extend(asked.iter().copied());
        for f in &forgotten {
            s.partitions.remove(f);
        }
        Ok(s.partitions.iter().copied().collect())
    })?;
    let config = caller.config(broker).await?;
    let mut targets = Targets::default();
    let mut out: BTreeMap<SessionPartition, PartitionData> = BTreeMap::new();
    let leader = LeaderIdAndEpoch::default()
        .with_leader_id(broker.node_id)
        .with_leader_epoch(0);
    let blank = |index: i32| {
        PartitionData::default()
            .with_partition_index(index)
            .with_current_leader(leader.clone())
    };

    for (&(topic_id, index), offsets) in &batches {
        let code = caller
            .acknowledge(
                broker,
                access,
                &mut targets,
                (topic_id, index),
                offsets,
                &config,
            )
            .await;
        out.entry((topic_id, index))
            .or_insert_with(|| blank(index))
            .acknowledge_error_code = code;
    }

    if epoch == -1 {
        caller.close_session(broker).await;
    } else {
        fetch(
            broker,
            &request,
            &caller,
            &session,
            &config,
            access,
            &mut targets,
            &mut out,
            &blank,
        )
        .await;
    }

    let mut responses: Vec<ShareFetchableTopicResponse> = Vec::new();
    for ((topic_id, _), data) in out {
        match responses.last_mut() {
            Some(t) if t.topic_id == topic_id => t.partitions.push(data),
            _ => responses.push(
                ShareFetchableTopicResponse::default()
                    .with_topic_id(topic_id)
                    .with_partitions(vec![data]),
            ),
        }
    }
    Ok(ShareFetchResponse::default()
        .with_acquisition_lock_timeout_ms(i32::try_from(config.lock_ms).unwrap_or(i32::MAX))
        .with_responses(responses))
}

/// Acquires records from the session's partitions until some arrive or
/// `max_wait_ms` passes. An empty pass sleeps until the engine announces
/// new records or records given back (an append, a release, on this broker
/// or, on PostgreSQL, another), as Kafka Fetch and the native long poll do.
#[allow(clippy::too_many_arguments)]
async fn fetch(
    broker: &Broker,
    request: &ShareFetchRequest,
    caller: &Caller,
    session: &[SessionPartition],
    config: &ShareConfig,
    access: &Access,
    targets: &mut Targets,
    out: &mut BTreeMap<SessionPartition, PartitionData>,
    blank: &(dyn Fn(i32) -> PartitionData + Sync),
) {
    let max_records = usize::try_from(request.max_records)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_RECORDS)
        .min(MAX_RECORDS);
    let wait = Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0)).min(MAX_WAIT);
    let deadline = tokio::time::Instant::now() + wait;
    let (group, member) = (caller.group.as_str(), caller.member.as_str());
    let share = &broker.groups.share;
    // Members start at different partitions, so they spread over them.
    let shift = member.bytes().map(usize::from).sum::<usize>() % session.len().max(1);
    let mut order: Vec<SessionPartition> = session.to_vec();
    order.rotate_left(shift);
    let appended = broker.engine.appended_anywhere();
    loop {
        // Armed before looking, so records landing meanwhile still wake us.
        let notified = appended.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let mut got = 0usize;
        for &(topic_id, index) in &order {
            if got >= max_records {
                break;
            }
            let target = match targets.resolve(broker, access, topic_id, index).await {
                Ok(t) => t,
                Err(e) => {
                    out.entry((topic_id, index))
                        .or_insert_with(|| blank(index))
                        .error_code = e.code();
                    continue;
                }
            };
            let now = share.now();
            let acquired =
                match acquire(broker, group, &target, max_records - got, config, now).await {
                    Ok(Some(a)) => a,
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(group, error = %e, "kafka share fetch: acquiring failed");
                        out.entry((topic_id, index))
                            .or_insert_with(|| blank(index))
                            .error_code = crate::error::storage_code(&e);
                        continue;
                    }
                };
            let held = acquired.held;
            let kept = share.with_member(group, member, |m, _| {
                m.hold(target.id, held.clone());
                Ok(())
            });
            if kept.is_err() {
                // The member left meanwhile: give the records back.
                release(
                    broker,
                    group,
                    held.into_iter().map(|h| (target.id, h)).collect(),
                )
                .await;
                continue;
            }
            got += held_len(&acquired.ranges);
            let data = out.entry((topic_id, index)).or_insert_with(|| blank(index));
            data.records = Some(acquired.records);
            data.acquired_records = acquired.ranges;
        }
        if got > 0 || tokio::time::timeout_at(deadline, notified).await.is_err() {
            return;
        }
    }
}

/// How many records acquired ranges cover.
fn held_len(ranges: &[kafka_protocol::messages::share_fetch_response::AcquiredRecords]) -> usize {
    ranges
        .iter()
        .map(|r| usize::try_from(r.last_offset - r.first_offset + 1).unwrap_or(0))
        .sum()
}
