//! CreateAcls: stores bindings; needs ALTER on the cluster. Each creation
//! is answered on its own; the valid ones are stored together.

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};
use kafka_protocol::protocol::StrBytes;
use storage::{Access, AclOperation};

use super::acls::{binding, refusal, require_cluster, Refusal};
use crate::broker::Broker;

/// Creates the valid bindings; each creation gets its own result.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: CreateAclsRequest,
    access: &Access,
) -> CreateAclsResponse {
    let mut results: Vec<Result<(), Refusal>> = Vec::with_capacity(request.creations.len());
    let mut valid = Vec::new();
    let allowed = require_cluster(access, AclOperation::Alter);
    for c in &request.creations {
        let made = allowed.clone().and_then(|()| {
            binding(
                c.resource_type,
                &c.resource_name,
                c.resource_pattern_type,
                &c.principal,
                &c.host,
                c.operation,
                c.permission_type,
            )
        });
        match made {
            Ok(b) => {
                valid.push(b);
                results.push(Ok(()));
            }
            Err(refused) => results.push(Err(refused)),
        }
    }
    if let Err(e) = broker.authorizer.create(&valid).await {
        let failed = refusal(&e);
        for r in results.iter_mut().filter(|r| r.is_ok()) {
            *r = Err(failed.clone());
        }
    }
    let results = results
        .into_iter()
        .map(|r| match r {
            Ok(()) => AclCreationResult::default(),
            Err((code, message)) => AclCreationResult::default()
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message))),
        })
        .collect();
    CreateAclsResponse::default().with_results(results)
}
