//! What CreateAcls, DescribeAcls and DeleteAcls share: Kafka's codes and
//! strings turned into bindings and filters (refusing unknown codes), and
//! the cluster permission each API needs.

use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{
    Access, AclBinding, AclError, AclFilter, AclOperation, AclPermission, PatternFilter,
    PatternType, ResourceType, CLUSTER_NAME,
};

/// Kafka's code for "any" in a filter.
const ANY: i8 = 1;

/// The error code and message of a refused ACL operation.
pub(super) use super::alter_configs::Refusal;

/// Refuses unless `operation` on the cluster is allowed.
pub(super) fn require_cluster(access: &Access, operation: AclOperation) -> Result<(), Refusal> {
    if access.allows(operation, ResourceType::Cluster, CLUSTER_NAME) {
        Ok(())
    } else {
        Err((
            ResponseError::ClusterAuthorizationFailed.code(),
            format!("{operation:?} on the cluster is not allowed"),
        ))
    }
}

fn invalid(what: &str, code: i8) -> Refusal {
    (
        ResponseError::InvalidRequest.code(),
        format!("unknown or unusable {what} code {code}"),
    )
}

/// A code that must name a value.
fn value<T>(code: i8, from: fn(i8) -> Option<T>, what: &str) -> Result<T, Refusal> {
    from(code).ok_or_else(|| invalid(what, code))
}

/// A filter code: ANY, or one value.
fn any_or<T>(code: i8, from: fn(i8) -> Option<T>, what: &str) -> Result<Option<T>, Refusal> {
    if code == ANY {
        return Ok(None);
    }
    value(code, from, what).map(Some)
}

/// The binding a CreateAcls creation describes, checked.
pub(super) fn binding(
    resource_type: i8,
    resource_name: &str,
    pattern: i8,
    principal: &str,
    host: &str,
    operation: i8,
    permission: i8,
) -> Result<AclBinding, Refusal> {
    let binding = AclBinding {
        resource_type: value(resource_type, ResourceType::from_code, "resource type")?,
        resource_name: resource_name.to_owned(),
        pattern: value(pattern, PatternType::from_code, "pattern type")?,
        principal: principal.to_owned(),
        host: host.to_owned(),
        operation: value(operation, AclOperation::from_code, "operation")?,
        permission: value(permission, AclPermission::from_code, "permission")?,
    };
    binding.validate().map_err(|e| refusal(&e))?;
    Ok(binding)
}

/// The filter of a DescribeAcls request or a DeleteAcls filter.
pub(super) fn filter(
    resource_type: i8,
    resource_name: Option<&StrBytes>,
    pattern: i8,
    principal: Option<&StrBytes>,
    host: Option<&StrBytes>,
    operation: i8,
    permission: i8,
) -> Result<AclFilter, Refusal> {
    Ok(AclFilter {
        resource_type: any_or(resource_type, ResourceType::from_code, "resource type")?,
        resource_name: resource_name.map(|n| n.to_string()),
        pattern: PatternFilter::from_code(pattern)
            .ok_or_else(|| invalid("pattern type", pattern))?,
        principal: principal.map(|p| p.to_string()),
        host: host.map(|h| h.to_string()),
        operation: any_or(operation, AclOperation::from_code, "operation")?,
        permission: any_or(permission, AclPermission::from_code, "permission")?,
    })
}

/// The Kafka code and message of an ACL store error.
pub(super) fn refusal(e: &AclError) -> Refusal {
    match e {
        AclError::Invalid(why) => (ResponseError::InvalidRequest.code(), why.clone()),
        AclError::Storage(e) => (crate::error::storage_code(e), e.to_string()),
    }
}
