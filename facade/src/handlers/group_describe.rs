//! What ConsumerGroupDescribe and ShareGroupDescribe share: the checks
//! before a group is described, and the answers of one that cannot be.

use kafka_protocol::messages::{consumer_group_describe_response, share_group_describe_response};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;

/// A described group of ConsumerGroupDescribe or ShareGroupDescribe.
pub(super) trait Described: Default {
    /// The group refused with `error`, in `state` when one is named.
    fn refused(error: ResponseError, message: Option<String>, state: Option<&'static str>) -> Self;
}

macro_rules! described {
    ($($group:ty),* $(,)?) => {$(
        impl Described for $group {
            fn refused(
                error: ResponseError,
                message: Option<String>,
                state: Option<&'static str>,
            ) -> Self {
                let mut group = Self::default()
                    .with_error_code(error.code())
                    .with_error_message(message.map(StrBytes::from_string));
                if let Some(state) = state {
                    group.group_state = StrBytes::from_static_str(state);
                }
                group
            }
        }
    )*};
}

described!(
    consumer_group_describe_response::DescribedGroup,
    share_group_describe_response::DescribedGroup,
);

/// The answer for a group this principal may not describe
/// (`GROUP_AUTHORIZATION_FAILED`) or this broker does not coordinate;
/// `None` when it may be described.
pub(super) async fn refused<D: Described>(
    broker: &Broker,
    access: &Access,
    name: &str,
) -> Option<D> {
    if !access.group(AclOperation::Describe, name) {
        return Some(D::refused(
            ResponseError::GroupAuthorizationFailed,
            None,
            None,
        ));
    }
    let error = broker.group_error(name).await?;
    Some(D::refused(error, None, None))
}

/// The answer for a group that is not of `kind`, or unknown:
/// `GROUP_ID_NOT_FOUND` in state `Dead`, as Kafka answers.
pub(super) fn not_found<D: Described>(name: &str, kind: &str) -> D {
    D::refused(
        ResponseError::GroupIdNotFound,
        Some(format!("group {name} is not a {kind} group")),
        Some("Dead"),
    )
}
