//! DescribeCluster: the live brokers, the controller, the cluster id and
//! what the client may do with the cluster (KIP-430).

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;
use storage::Access;

use crate::broker::Broker;
use crate::error::storage_code;

/// Answers with the brokers sharing the database.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DescribeClusterRequest,
    listener: &str,
    access: &Access,
) -> DescribeClusterResponse {
    let mut answer = DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(broker.cluster_id.clone()))
        .with_cluster_authorized_operations(crate::authorized::cluster(
            request.include_cluster_authorized_operations,
            access,
        ));
    match broker.live_brokers(listener).await {
        Ok(brokers) => {
            answer.controller_id = BrokerId(brokers.first().map_or(broker.node_id, |b| b.id));
            answer.brokers = brokers
                .into_iter()
                .map(|b| {
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(b.id))
                        .with_host(StrBytes::from_string(b.host))
                        .with_port(b.port)
                })
                .collect();
        }
        Err(e) => answer.error_code = storage_code(&e),
    }
    answer
}
