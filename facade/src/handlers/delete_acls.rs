//! DeleteAcls: deletes what each filter matches, answering the bindings
//! deleted per filter; needs ALTER on the cluster.

use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse};
use kafka_protocol::protocol::StrBytes;
use storage::{Access, AclBinding, AclOperation};

use super::acls::{filter, refusal, require_cluster, Refusal};
use crate::broker::Broker;

/// Deletes by the valid filters, in one transaction; an invalid filter is
/// answered on its own.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DeleteAclsRequest,
    access: &Access,
) -> DeleteAclsResponse {
    let allowed = require_cluster(access, AclOperation::Alter);
    let parsed: Vec<_> = request
        .filters
        .iter()
        .map(|f| {
            allowed.clone().and_then(|()| {
                filter(
                    f.resource_type_filter,
                    f.resource_name_filter.as_ref(),
                    f.pattern_type_filter,
                    f.principal_filter.as_ref(),
                    f.host_filter.as_ref(),
                    f.operation,
                    f.permission_type,
                )
            })
        })
        .collect();
    let valid: Vec<_> = parsed
        .iter()
        .filter_map(|p| p.as_ref().ok().cloned())
        .collect();
    let mut deleted = match broker.authorizer.delete(&valid).await {
        Ok(deleted) => Ok(deleted.into_iter()),
        Err(e) => Err(refusal(&e)),
    };
    let results = parsed
        .into_iter()
        .map(|p| {
            let outcome: Result<Vec<AclBinding>, Refusal> = match (p, &mut deleted) {
                (Err(refused), _) => Err(refused),
                (Ok(_), Ok(each)) => Ok(each.next().unwrap_or_default()),
                (Ok(_), Err(failed)) => Err(failed.clone()),
            };
            match outcome {
                Ok(bindings) => DeleteAclsFilterResult::default()
                    .with_matching_acls(bindings.into_iter().map(matching).collect()),
                Err((code, message)) => DeleteAclsFilterResult::default()
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
            }
        })
        .collect();
    DeleteAclsResponse::default().with_filter_results(results)
}

fn matching(b: AclBinding) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl::default()
        .with_resource_type(b.resource_type.code())
        .with_resource_name(StrBytes::from_string(b.resource_name))
        .with_pattern_type(b.pattern.code())
        .with_principal(StrBytes::from_string(b.principal))
        .with_host(StrBytes::from_string(b.host))
        .with_operation(b.operation.code())
        .with_permission_type(b.permission.code())
}
