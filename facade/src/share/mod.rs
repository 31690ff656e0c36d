//! KIP-932 share groups on the native engine: what ShareFetch and
//! ShareAcknowledge do with records. Acquiring is a native pop of the
//! group (its lease is the acquisition lock), ACCEPT is an ack
//! `completed`, RELEASE a `retry`, REJECT a `dlq`, and a record delivered
//! more than `share.delivery.count.limit` times is dead-lettered. The
//! membership and sessions are in `crate::groups::share`.

use kafka_protocol::messages::{
    AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponse, ShareAcknowledgeResponse,
    ShareFetchResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, QueueInfo};

use crate::broker::Broker;
use crate::groups::share::{Member, SessionPartition};
use config::ShareConfig;
use target::Targets;

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
) -> Result<Caller, Refusal> {
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
    Ok(Caller { group, member })
}

/// The subscribed topics that exist, each read once: a share group
/// member is assigned every partition of them. A topic that cannot be read
/// is left out (and logged).
pub(crate) async fn subscribed<'a>(
    broker: &Broker,
    topics: impl IntoIterator<Item = &'a String>,
) -> Vec<QueueInfo> {
    let mut out = Vec::new();
    for name in topics {
        match broker.engine.queue(name).await {
            Ok(Some(q)) => out.push(q),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(topic = name, error = %e, "kafka share group: reading a topic failed")
            }
        }
    }
    out
}

/// A response that refuses a whole request with a code and a message.
pub(crate) trait Refusable: Default {
    /// The response refusing the request with `error`, saying why.
    fn refused(error: ResponseError, why: String) -> Self;
}

macro_rules! refusable {
    ($($response:ty),* $(,)?) => {$(
        impl Refusable for $response {
            fn refused(error: ResponseError, why: String) -> Self {
                Self::default()
                    .with_error_code(error.code())
                    .with_error_message(Some(StrBytes::from_string(why)))
            }
        }
    )*};
}

refusable!(
    ShareFetchResponse,
    ShareAcknowledgeResponse,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
);

/// What a handler answers: the response served, or the refusal of the
/// whole request.
pub(crate) fn answer<R: Refusable>(served: Result<R, Refusal>) -> R {
    served.unwrap_or_else(|(error, why)| R::refused(error, why))
}

/// The member a ShareFetch or ShareAcknowledge comes from.
#[derive(Debug)]
pub(crate) struct Caller {
    /// Its group.
    pub(crate) group: String,
    /// Its member id.
    pub(crate) member: String,
}

impl Caller {
    /// Runs `f` on the member within its share session at `epoch`, or
    /// refuses the request (unknown member, wrong epoch, no session).
    pub(crate) fn in_session<T>(
        &self,
        broker: &Broker,
        epoch: i32,
        f: impl FnOnce(&mut Member) -> Result<T, ResponseError>,
    ) -> Result<T, Refusal> {
        let member = &self.member;
        broker
            .groups
            .share
            .with_member(&self.group, member, |m, _| f(m))
            .map_err(|e| {
                (
                    e,
                    format!("share session of member {member} at epoch {epoch}: {e}"),
                )
            })
    }

    /// The group's share configs.
    pub(crate) async fn config(&self, broker: &Broker) -> Result<ShareConfig, Refusal> {
        config::load(&broker.engine, &self.group)
            .await
            .map_err(|e| (ResponseError::UnknownServerError, e.to_string()))
    }

    /// Acknowledges `offsets` of partition `index` of topic `topic_id`:
    /// the code that partition answers.
    pub(crate) async fn acknowledge(
        &self,
        broker: &Broker,
        access: &Access,
        targets: &mut Targets,
        (topic_id, index): SessionPartition,
        offsets: &[(i64, i8)],
        config: &ShareConfig,
    ) -> i16 {
        let target = match targets.resolve(broker, access, topic_id, index).await {
            Ok(t) => t,
            Err(e) => return e.code(),
        };
        let acked = acknowledge::acknowledge(
            broker,
            &self.group,
            &self.member,
            target.id,
            offsets,
            config,
        )
        .await;
        crate::error::code(acked.err())
    }

    /// Closes the member's share session (epoch -1) and releases what it
    /// still holds.
    pub(crate) async fn close_session(&self, broker: &Broker) {
        let held = broker
            .groups
            .share
            .with_member(&self.group, &self.member, |m, _| Ok(m.close_session()))
            .unwrap_or_default();
        release::release(broker, &self.group, held).await;
    }
}
