//! DeleteGroups: removes groups without members and their committed
//! offsets, which are also the native consumer group's positions.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Deletes each group; errors are per group.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DeleteGroupsRequest,
    access: &Access,
) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(request.groups_names.len());
    for id in request.groups_names {
        let code = if access.group(AclOperation::Delete, &id) {
            delete(broker, &id).await
        } else {
            ResponseError::GroupAuthorizationFailed.code()
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(id)
                .with_error_code(code),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}

async fn delete(broker: &Broker, group: &str) -> i16 {
    if let Some(error) = broker.group_error(group).await {
        return error.code();
    }
    if broker.groups.has_members(group) {
        return ResponseError::NonEmptyGroup.code();
    }
    // An Empty group that had members exists even without offsets.
    let known = broker.groups.forget(group);
    match broker.engine.committed_offsets(group).await {
        Ok(offsets) if offsets.is_empty() && known => 0,
        Ok(offsets) if offsets.is_empty() => ResponseError::GroupIdNotFound.code(),
        Ok(_) => match broker.engine.delete_consumer_group(group, None, true).await {
            Ok(_) => 0,
            Err(e) => storage_code(&e),
        },
        Err(e) => storage_code(&e),
    }
}
