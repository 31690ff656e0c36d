//! DescribeConfigs v0: v1 without `include_synonyms`; each config answers
//! `is_default` where v1 answers its source (and synonyms).

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use super::wire::{put_array, put_nullable_string, put_string, Reader};
use crate::conn::ConnError;

/// Kafka's `ConfigSource.DEFAULT_CONFIG`.
const DEFAULT_CONFIG: i8 = 5;

/// Reads `[resource type, resource name, [config name] (null: all)]`.
pub(super) fn decode(r: &mut Reader) -> Result<DescribeConfigsRequest, ConnError> {
    let resources = r.array(1 + 2 + 4, |r| {
        let resource_type = r.i8()?;
        let resource_name = r.string()?;
        // A null list (count -1) asks for every config.
        let keys = match r.i32()? {
            n if n < 0 => None,
            n => Some(r.counted(n, 2, Reader::string)?),
        };
        Ok(DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(resource_name)
            .with_configuration_keys(keys))
    })?;
    Ok(DescribeConfigsRequest::default().with_resources(resources))
}

/// Writes `throttle, [error, message, type, name, [name, value, read only,
/// is default, sensitive]]`.
pub(super) fn encode(answer: &DescribeConfigsResponse, out: &mut BytesMut) {
    out.put_i32(answer.throttle_time_ms);
    put_array(out, &answer.results, |out, result| {
        out.put_i16(result.error_code);
        put_nullable_string(out, result.error_message.as_deref());
        out.put_i8(result.resource_type);
        put_string(out, &result.resource_name);
        put_array(out, &result.configs, |out, c| {
            put_string(out, &c.name);
            put_nullable_string(out, c.value.as_deref());
            out.put_u8(u8::from(c.read_only));
            out.put_u8(u8::from(c.config_source == DEFAULT_CONFIG));
            out.put_u8(u8::from(c.is_sensitive));
        });
    });
}
