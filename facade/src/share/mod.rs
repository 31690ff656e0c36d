//! KIP-932 share groups on the native engine: what ShareFetch and
//! ShareAcknowledge do with records. Acquiring is a native pop of the
//! group (its lease is the acquisition lock), ACCEPT is an ack
//! `completed`, RELEASE a `retry`, REJECT a `dlq`, and a record delivered
//! more than `share.delivery.count.limit` times is dead-lettered. The
//! membership and sessions are in `crate::groups::share`.

use kafka_protocol::ResponseError;
use storage::Access;

use crate::broker::Broker;

pub(crate) mod acknowledge;
pub(crate) mod acquire;
pub(crate) mod config;
pub(crate) mod offsets;
pub(crate) mod release;
pub(crate) mod target;

/// The dead-letter error of a record delivered too often.
pub(crate) const EXHAUSTED: &str = "delivery count limit reached (share.delivery.count.limit)";

/// Why a share request is refused as a whole: its error and message.
pub(crate) type Refusal = (ResponseError, String);

/// The group and member of a ShareFetch or ShareAcknowledge, once both are
/// given and the principal may READ the group here.
pub(crate) async fn identify(
    broker: &Broker,
    access: &Access,
    group: Option<&str>,
    member: Option<&str>,
) -> Result<(String, String), Refusal> {
    let (group, member) = match (group, member) {
        (Some(g), Some(m)) if !g.is_empty() && !m.is_empty() => (g.to_owned(), m.to_owned()),
        _ => {
            return Err((
                ResponseError::InvalidRequest,
                "group id and member id are required".into(),
            ))
        }
    };
    if let Some(error) = broker.member_error(access, &group).await {
        return Err((error, error.to_string()));
    }
    Ok((group, member))
}
