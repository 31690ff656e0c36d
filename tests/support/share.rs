//! A raw KIP-932 share consumer for the tests and the bench: the
//! `rdkafka` crate exposes no share consumer, so this speaks the wire
//! protocol with the `kafka-protocol` crate (ShareGroupHeartbeat,
//! ShareFetch, ShareAcknowledge), one blocking connection per request.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckBatch,
};
use kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;
use uuid::Uuid;

use super::kafka::call;

/// KIP-932 acknowledgement types.
pub(crate) const ACCEPT: i8 = 1;
/// Deliver again.
pub(crate) const RELEASE: i8 = 2;
/// Dead-letter.
pub(crate) const REJECT: i8 = 3;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

/// One acquired record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Acquired {
    /// Topic id and partition index.
    pub(crate) partition: (Uuid, i32),
    /// Its offset.
    pub(crate) offset: i64,
    /// Its value.
    pub(crate) value: Vec<u8>,
    /// Its delivery count.
    pub(crate) delivery: i16,
}

/// A share group member with its share session.
#[derive(Debug)]
pub(crate) struct ShareConsumer {
    /// The broker's Kafka address.
    pub(crate) kafka: String,
    /// The group.
    pub(crate) group: String,
    /// The member id (chosen by the client, as KIP-932 wants).
    pub(crate) member: String,
    /// The member epoch of the last heartbeat.
    pub(crate) epoch: i32,
    /// The next share session epoch (0 opens one).
    pub(crate) session: i32,
    /// The assigned partitions.
    pub(crate) assigned: Vec<(Uuid, i32)>,
}

impl ShareConsumer {
    /// Joins `group` subscribed to `topics` (blocking).
    pub(crate) fn join(kafka: &str, group: &str, topics: &[&str]) -> Self {
        let member = Uuid::new_v4().to_string();
        let request = ShareGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_member_id(s(&member))
            .with_member_epoch(0)
            .with_subscribed_topic_names(Some(topics.iter().map(|t| TopicName(s(t))).collect()));
        let answer: ShareGroupHeartbeatResponse =
            call(kafka, ApiKey::ShareGroupHeartbeat, 1, &request);
        assert_eq!(answer.error_code, 0, "join: {:?}", answer.error_message);
        let assigned = answer
            .assignment
            .map(|a| {
                a.topic_partitions
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            kafka: kafka.to_owned(),
            group: group.to_owned(),
            member,
            epoch: answer.member_epoch,
            session: 0,
            assigned,
        }
    }

    /// A heartbeat at `epoch` (the member's own unless testing fencing).
    pub(crate) fn heartbeat(&self, epoch: i32) -> ShareGroupHeartbeatResponse {
        let request = ShareGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_member_id(s(&self.member))
            .with_member_epoch(epoch);
        call(&self.kafka, ApiKey::ShareGroupHeartbeat, 1, &request)
    }

    /// A ShareFetch at the session's next epoch over the assigned
    /// partitions, carrying `acks` (offset, type) per partition. The
    /// session epoch moves on only when the broker took the request.
    pub(crate) fn fetch_raw(
        &mut self,
        acks: &BTreeMap<(Uuid, i32), Vec<(i64, i8)>>,
        max_records: i32,
        max_wait_ms: i32,
    ) -> ShareFetchResponse {
        let mut topics: BTreeMap<Uuid, Vec<FetchPartition>> = BTreeMap::new();
        // The session remembers the partitions: only the first fetch names them all.
        let named: Vec<(Uuid, i32)> = if self.session == 0 {
            self.assigned.clone()
        } else {
            acks.keys().copied().collect()
        };
        for (topic, index) in named {
            let batches = acks
                .get(&(topic, index))
                .map(|list| {
                    list.iter()
                        .map(|(o, t)| {
                            AcknowledgementBatch::default()
                                .with_first_offset(*o)
                                .with_last_offset(*o)
                                .with_acknowledge_types(vec![*t])
                        })
                        .collect()
                })
                .unwrap_or_default();
            topics.entry(topic).or_default().push(
                FetchPartition::default()
                    .with_partition_index(index)
                    .with_acknowledgement_batches(batches),
            );
        }
        let request = ShareFetchRequest::default()
            .with_group_id(Some(GroupId(s(&self.group))))
            .with_member_id(Some(s(&self.member)))
            .with_share_session_epoch(self.session)
            .with_max_wait_ms(max_wait_ms)
            .with_max_bytes(i32::MAX)
            .with_max_records(max_records)
            .with_batch_size(max_records)
            .with_topics(
                topics
                    .into_iter()
                    .map(|(id, partitions)| {
                        FetchTopic::default()
                            .with_topic_id(id)
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let answer: ShareFetchResponse = call(&self.kafka, ApiKey::ShareFetch, 1, &request);
        if answer.error_code == 0 {
            self.session = next(self.session);
        }
        answer
    }

    /// Fetches (acknowledging `acks`) and returns the acquired records;
    /// panics on any error.
    pub(crate) fn fetch(
        &mut self,
        acks: &BTreeMap<(Uuid, i32), Vec<(i64, i8)>>,
        max_records: i32,
        max_wait_ms: i32,
    ) -> Vec<Acquired> {
        let answer = self.fetch_raw(acks, max_records, max_wait_ms);
        assert_eq!(
            answer.error_code, 0,
            "share fetch: {:?}",
            answer.error_message
        );
        records(&answer)
    }

    /// A ShareAcknowledge at the session's next epoch.
    pub(crate) fn acknowledge(
        &mut self,
        acks: &BTreeMap<(Uuid, i32), Vec<(i64, i8)>>,
    ) -> ShareAcknowledgeResponse {
        self.acknowledge_at(acks, self.session)
    }

    /// A ShareAcknowledge at `epoch`.
    pub(crate) fn acknowledge_at(
        &mut self,
        acks: &BTreeMap<(Uuid, i32), Vec<(i64, i8)>>,
        epoch: i32,
    ) -> ShareAcknowledgeResponse {
        let mut topics: BTreeMap<Uuid, Vec<AcknowledgePartition>> = BTreeMap::new();
        for ((topic, index), list) in acks {
            topics.entry(*topic).or_default().push(
                AcknowledgePartition::default()
                    .with_partition_index(*index)
                    .with_acknowledgement_batches(
                        list.iter()
                            .map(|(o, t)| {
                                AckBatch::default()
                                    .with_first_offset(*o)
                                    .with_last_offset(*o)
                                    .with_acknowledge_types(vec![*t])
                            })
                            .collect(),
                    ),
            );
        }
        let request = ShareAcknowledgeRequest::default()
            .with_group_id(Some(GroupId(s(&self.group))))
            .with_member_id(Some(s(&self.member)))
            .with_share_session_epoch(epoch)
            .with_topics(
                topics
                    .into_iter()
                    .map(|(id, partitions)| {
                        AcknowledgeTopic::default()
                            .with_topic_id(id)
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let answer: ShareAcknowledgeResponse =
            call(&self.kafka, ApiKey::ShareAcknowledge, 1, &request);
        if answer.error_code == 0 && epoch == self.session {
            self.session = next(self.session);
        }
        answer
    }
}

fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// The acquired records of a ShareFetch answer, with their values.
pub(crate) fn records(answer: &ShareFetchResponse) -> Vec<Acquired> {
    let mut out = Vec::new();
    for topic in &answer.responses {
        for p in &topic.partitions {
            let Some(bytes) = &p.records else { continue };
            let mut buf: Bytes = bytes.clone();
            let set = RecordBatchDecoder::decode(&mut buf).expect("record batch");
            for r in set.records {
                let delivery = p
                    .acquired_records
                    .iter()
                    .find(|a| a.first_offset <= r.offset && r.offset <= a.last_offset)
                    .map(|a| a.delivery_count)
                    .expect("every record is acquired");
                out.push(Acquired {
                    partition: (topic.topic_id, p.partition_index),
                    offset: r.offset,
                    value: r.value.map(|v| v.to_vec()).unwrap_or_default(),
                    delivery,
                });
            }
        }
    }
    out
}

/// Sets share-group configs of `group` (IncrementalAlterConfigs SET).
pub(crate) fn set_group_configs(kafka: &str, group: &str, configs: &[(&str, &str)]) {
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(32)
            .with_resource_name(s(group))
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        AlterableConfig::default()
                            .with_name(s(k))
                            .with_config_operation(0)
                            .with_value(Some(s(v)))
                    })
                    .collect(),
            ),
    ]);
    let answer: IncrementalAlterConfigsResponse =
        call(kafka, ApiKey::IncrementalAlterConfigs, 1, &request);
    for r in answer.responses {
        assert_eq!(r.error_code, 0, "group configs: {:?}", r.error_message);
    }
}

/// Acknowledgements of `records`, each with its own kind.
pub(crate) fn each(records: &[(&Acquired, i8)]) -> BTreeMap<(Uuid, i32), Vec<(i64, i8)>> {
    let mut acks: BTreeMap<(Uuid, i32), Vec<(i64, i8)>> = BTreeMap::new();
    for (r, kind) in records {
        acks.entry(r.partition).or_default().push((r.offset, *kind));
    }
    acks
}

/// Acknowledgements of `records`, all with `kind`.
pub(crate) fn all(records: &[Acquired], kind: i8) -> BTreeMap<(Uuid, i32), Vec<(i64, i8)>> {
    let mut acks: BTreeMap<(Uuid, i32), Vec<(i64, i8)>> = BTreeMap::new();
    for r in records {
        acks.entry(r.partition).or_default().push((r.offset, kind));
    }
    acks
}
