//! DescribeLogDirs: the broker's one "log directory", its database, with
//! the stored size of each partition.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Kafka's "unknown" for a volume's total and usable bytes (v4): the
/// database's volume is not this process's to measure.
const UNKNOWN_VOLUME_BYTES: i64 = -1;

/// Describes the requested partitions (every partition when `topics` is
/// null) in one log directory named for the backend and the cluster.
/// Partitions that do not exist are left out, as Kafka leaves them out.
pub(super) async fn handle(
    broker: &Broker,
    version: i16,
    request: DescribeLogDirsRequest,
    access: &Access,
) -> DescribeLogDirsResponse {
    // Kafka asks DESCRIBE on the cluster and answers no directory without
    // it (saying why from v3, which has the field).
    if !access.cluster(AclOperation::Describe) {
        let mut answer = DescribeLogDirsResponse::default();
        if version >= 3 {
            answer.error_code = ResponseError::ClusterAuthorizationFailed.code();
        }
        return answer;
    }
    let wanted: Option<BTreeMap<String, Vec<i32>>> = request.topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| (t.topic.to_string(), t.partitions))
            .collect()
    });
    let mut dir = DescribeLogDirsResult::default()
        .with_log_dir(StrBytes::from_string(format!(
            "{}:{}",
            broker.engine.backend(),
            broker.cluster_id
        )))
        .with_total_bytes(UNKNOWN_VOLUME_BYTES)
        .with_usable_bytes(UNKNOWN_VOLUME_BYTES);
    match broker.engine.partition_sizes().await {
        Ok(sizes) => {
            let mut topics: Vec<DescribeLogDirsTopic> = Vec::new();
            for size in sizes {
                let asked = wanted.as_ref().is_none_or(|w| {
                    w.get(&size.topic)
                        .is_some_and(|partitions| partitions.contains(&size.index))
                });
                if !asked {
                    continue;
                }
                let partition = DescribeLogDirsPartition::default()
                    .with_partition_index(size.index)
                    .with_partition_size(size.bytes)
                    // One replica, the log itself: never behind its high watermark.
                    .with_offset_lag(0);
                match topics.last_mut() {
                    Some(t) if t.name.as_str() == size.topic => t.partitions.push(partition),
                    _ => topics.push(
                        DescribeLogDirsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(size.topic)))
                            .with_partitions(vec![partition]),
                    ),
                }
            }
            dir.topics = topics;
        }
        Err(e) => dir.error_code = storage_code(&e),
    }
    DescribeLogDirsResponse::default().with_results(vec![dir])
}
