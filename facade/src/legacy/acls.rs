//! The ACL APIs' v0 (DescribeAcls, CreateAcls, DeleteAcls): v1 without
//! the resource pattern type, which v0 means as LITERAL (the crate's
//! default); answers without the pattern type. CreateAcls v0 answers as v1.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    CreateAclsRequest, DeleteAclsRequest, DeleteAclsResponse, DescribeAclsRequest,
    DescribeAclsResponse,
};

use super::wire::{put_array, put_nullable_string, put_string, Reader};
use crate::conn::ConnError;

/// Reads `resource type, name, principal, host, operation, permission`
/// filters (each string nullable).
pub(super) fn decode_describe(r: &mut Reader) -> Result<DescribeAclsRequest, ConnError> {
    Ok(DescribeAclsRequest::default()
        .with_resource_type_filter(r.i8()?)
        .with_resource_name_filter(r.nullable_string()?)
        .with_principal_filter(r.nullable_string()?)
        .with_host_filter(r.nullable_string()?)
        .with_operation(r.i8()?)
        .with_permission_type(r.i8()?))
}

/// Writes `throttle, error, message, [type, name, [principal, host,
/// operation, permission]]`.
pub(super) fn encode_describe(answer: &DescribeAclsResponse, out: &mut BytesMut) {
    out.put_i32(answer.throttle_time_ms);
    out.put_i16(answer.error_code);
    put_nullable_string(out, answer.error_message.as_deref());
    put_array(out, &answer.resources, |out, resource| {
        out.put_i8(resource.resource_type);
        put_string(out, &resource.resource_name);
        put_array(out, &resource.acls, |out, acl| {
            put_string(out, &acl.principal);
            put_string(out, &acl.host);
            out.put_i8(acl.operation);
            out.put_i8(acl.permission_type);
        });
    });
}

/// Reads `[resource type, name, principal, host, operation, permission]`.
pub(super) fn decode_create(r: &mut Reader) -> Result<CreateAclsRequest, ConnError> {
    let creations = r.array(1 + 2 + 2 + 2 + 1 + 1, |r| {
        Ok(AclCreation::default()
            .with_resource_type(r.i8()?)
            .with_resource_name(r.string()?)
            .with_principal(r.string()?)
            .with_host(r.string()?)
            .with_operation(r.i8()?)
            .with_permission_type(r.i8()?))
    })?;
    Ok(CreateAclsRequest::default().with_creations(creations))
}

/// Reads filters as [`decode_describe`] does, in a list.
pub(super) fn decode_delete(r: &mut Reader) -> Result<DeleteAclsRequest, ConnError> {
    let filters = r.array(1 + 2 + 2 + 2 + 1 + 1, |r| {
        Ok(DeleteAclsFilter::default()
            .with_resource_type_filter(r.i8()?)
            .with_resource_name_filter(r.nullable_string()?)
            .with_principal_filter(r.nullable_string()?)
            .with_host_filter(r.nullable_string()?)
            .with_operation(r.i8()?)
            .with_permission_type(r.i8()?))
    })?;
    Ok(DeleteAclsRequest::default().with_filters(filters))
}

/// Writes `throttle, [error, message, [error, message, type, name,
/// principal, host, operation, permission]]`.
pub(super) fn encode_delete(answer: &DeleteAclsResponse, out: &mut BytesMut) {
    out.put_i32(answer.throttle_time_ms);
    put_array(out, &answer.filter_results, |out, result| {
        out.put_i16(result.error_code);
        put_nullable_string(out, result.error_message.as_deref());
        put_array(out, &result.matching_acls, |out, acl| {
            out.put_i16(acl.error_code);
            put_nullable_string(out, acl.error_message.as_deref());
            out.put_i8(acl.resource_type);
            put_string(out, &acl.resource_name);
            put_string(out, &acl.principal);
            put_string(out, &acl.host);
            out.put_i8(acl.operation);
            out.put_i8(acl.permission_type);
        });
    });
}
