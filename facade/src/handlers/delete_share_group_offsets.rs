//! DeleteShareGroupOffsets (KIP-932): removes a share group's start
//! offsets on every partition of the topics named, so it starts again by
//! `share.auto.offset.reset` there. As Kafka: DELETE on the group and READ
//! on each topic, refused while the group has members (`NON_EMPTY_GROUP`);
//! an unknown group is `GROUP_ID_NOT_FOUND`, an unknown topic
//! `UNKNOWN_TOPIC_OR_PARTITION` for that topic.

use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::{DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse};
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};
use uuid::Uuid;

use crate::broker::Broker;
use crate::error::storage_error;
use crate::share::{offsets, Refusal};

/// Deletes the start offsets; errors are for the whole request or per topic.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DeleteShareGroupOffsetsRequest,
    access: &Access,
) -> DeleteShareGroupOffsetsResponse {
    crate::share::answer(delete(broker, request, access).await)
}

async fn delete(
    broker: &Broker,
    request: DeleteShareGroupOffsetsRequest,
    access: &Access,
) -> Result<DeleteShareGroupOffsetsResponse, Refusal> {
    let group = request.group_id.to_string();
    if !access.group(AclOperation::Delete, &group) {
        return Err((
            ResponseError::GroupAuthorizationFailed,
            format!("DELETE on group {group} is not allowed"),
        ));
    }
    offsets::positions(broker, &group).await?;
    offsets::refuse_if_busy(broker, &group)?;
    let mut doomed = Vec::new();
    let mut responses = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.topic_name.to_string();
        let answer =
            DeleteShareGroupOffsetsResponseTopic::default().with_topic_name(topic.topic_name);
        responses.push(
            match offsets::topic(broker, access, AclOperation::Read, &name).await {
                Ok(info) => {
                    doomed.extend(info.partitions.iter().map(|p| p.id));
                    answer.with_topic_id(info.topic_id)
                }
                Err(code) => answer.with_topic_id(Uuid::nil()).with_error_code(code),
            },
        );
    }
    broker
        .engine
        .delete_offsets(&group, &doomed)
        .await
        .map_err(|e| (storage_error(&e), e.to_string()))?;
    // The group outlives its offsets, as in Kafka.
    broker.groups.share.adopt(&group);
    Ok(DeleteShareGroupOffsetsResponse::default().with_responses(responses))
}
