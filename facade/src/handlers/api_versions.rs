//! ApiVersions: what this broker implements, straight from the versions table.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::ResponseError;
use storage::Access;

use crate::broker::Broker;
use crate::versions;

fn api_keys() -> Vec<ApiVersion> {
    versions::advertised()
        .map(|(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect()
}

/// Answers with every implemented API and its version range.
pub(super) async fn handle(
    _broker: &Broker,
    _version: i16,
    _request: ApiVersionsRequest,
    _access: &Access,
) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(api_keys())
}

/// The answer to an ApiVersions version this broker does not know: v0 with
/// `UNSUPPORTED_VERSION` and the ranges, so the client retries with one it can use.
pub(super) fn unsupported() -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(api_keys())
}
