//! DescribeAcls: the bindings a filter matches, grouped by resource; needs
//! DESCRIBE on the cluster.

use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{DescribeAclsRequest, DescribeAclsResponse};
use kafka_protocol::protocol::StrBytes;
use storage::{Access, AclBinding, AclOperation};

use super::acls::{filter, refusal, require_cluster, Refusal};
use crate::broker::Broker;

/// Lists what the filter matches, or the reason it cannot.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DescribeAclsRequest,
    access: &Access,
) -> DescribeAclsResponse {
    match describe(broker, &request, access).await {
        Ok(bindings) => DescribeAclsResponse::default().with_resources(by_resource(bindings)),
        Err((code, message)) => DescribeAclsResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message))),
    }
}

async fn describe(
    broker: &Broker,
    r: &DescribeAclsRequest,
    access: &Access,
) -> Result<Vec<AclBinding>, Refusal> {
    require_cluster(access, AclOperation::Describe)?;
    let filter = filter(
        r.resource_type_filter,
        r.resource_name_filter.as_ref(),
        r.pattern_type_filter,
        r.principal_filter.as_ref(),
        r.host_filter.as_ref(),
        r.operation,
        r.permission_type,
    )?;
    broker
        .authorizer
        .describe(&filter)
        .await
        .map_err(|e| refusal(&e))
}

/// Bindings grouped by (type, name, pattern), as Kafka answers them; the
/// store lists them in that order already.
fn by_resource(bindings: Vec<AclBinding>) -> Vec<DescribeAclsResource> {
    let mut resources: Vec<DescribeAclsResource> = Vec::new();
    for b in bindings {
        let acl = AclDescription::default()
            .with_principal(StrBytes::from_string(b.principal))
            .with_host(StrBytes::from_string(b.host))
            .with_operation(b.operation.code())
            .with_permission_type(b.permission.code());
        match resources.last_mut() {
            Some(last)
                if last.resource_type == b.resource_type.code()
                    && last.resource_name.as_str() == b.resource_name
                    && last.pattern_type == b.pattern.code() =>
            {
                last.acls.push(acl)
            }
            _ => resources.push(
                DescribeAclsResource::default()
                    .with_resource_type(b.resource_type.code())
                    .with_resource_name(StrBytes::from_string(b.resource_name))
                    .with_pattern_type(b.pattern.code())
                    .with_acls(vec![acl]),
            ),
        }
    }
    resources
}
