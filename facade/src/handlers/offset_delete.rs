//! OffsetDelete: removes a group's committed offsets on some partitions,
//! refused for the topics its members are subscribed to.

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;
use crate::error::storage_code;

/// Deletes the offsets; errors are per partition, or for the whole group.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: OffsetDeleteRequest,
    access: &Access,
) -> OffsetDeleteResponse {
    let group = request.group_id.to_string();
    let failed = |code: i16| OffsetDeleteResponse::default().with_error_code(code);
    if !access.group(AclOperation::Delete, &group) {
        return failed(ResponseError::GroupAuthorizationFailed.code());
    }
    if let Some(error) = broker.group_error(&group).await {
        return failed(error.code());
    }
    let members = broker.groups.member_metadata(&group);
    // A KIP-848 group's subscriptions are the broker's to know.
    let consumers = broker.groups.consumer.subscribed_topics(&group);
    if members.is_empty() && consumers.is_empty() {
        match broker.engine.committed_offsets(&group).await {
            Ok(offsets) if offsets.is_empty() => {
                return failed(ResponseError::GroupIdNotFound.code())
            }
            Ok(_) => {}
            Err(e) => return failed(storage_code(&e)),
        }
    }
    let mut subscribed: Vec<String> = members.iter().flat_map(|m| subscribed_topics(m)).collect();
    subscribed.extend(consumers);
    let mut topics = Vec::with_capacity(request.topics.len());
    let mut doomed = Vec::new();
    for topic in request.topics {
        let name = topic.name.to_string();
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in topic.partitions {
            let code = if !access.topic(AclOperation::Read, &name) {
                ResponseError::TopicAuthorizationFailed.code()
            } else if subscribed.contains(&name) {
                ResponseError::GroupSubscribedToTopic.code()
            } else {
                match broker.partition_id(&name, p.partition_index, false).await {
                    Ok(Some(id)) => {
                        doomed.push(id);
                        0
                    }
                    Ok(None) => ResponseError::UnknownTopicOrPartition.code(),
                    Err(e) => storage_code(&e),
                }
            };
            partitions.push(
                OffsetDeleteResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(code),
            );
        }
        topics.push(
            OffsetDeleteResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    if let Err(e) = broker.engine.delete_offsets(&group, &doomed).await {
        return failed(storage_code(&e));
    }
    OffsetDeleteResponse::default().with_topics(topics)
}

/// The topics of a consumer protocol subscription (version, then an array
/// of strings; later versions only append fields). Read by hand with every
/// length checked: the bytes come from a client, and the codec would
/// allocate whatever count they claim.
fn subscribed_topics(metadata: &[u8]) -> Vec<String> {
    let mut topics = Vec::new();
    let Some(mut rest) = metadata.get(2..) else {
        return topics;
    };
    let Some((count, tail)) = rest.split_first_chunk::<4>() else {
        return topics;
    };
    rest = tail;
    for _ in 0..i32::from_be_bytes(*count).max(0) {
        let Some((len, tail)) = rest.split_first_chunk::<2>() else {
            break;
        };
        let len = usize::try_from(i16::from_be_bytes(*len)).unwrap_or(0);
        let Some((name, tail)) = tail.split_at_checked(len) else {
            break;
        };
        topics.push(String::from_utf8_lossy(name).into_owned());
        rest = tail;
    }
    topics
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_are_read_without_trusting_their_counts() {
        let mut m = vec![0, 1, 0, 0, 0, 2];
        for t in ["orders", "pay"] {
            m.extend_from_slice(&(t.len() as i16).to_be_bytes());
            m.extend_from_slice(t.as_bytes());
        }
        m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]); // user data, null
        assert_eq!(subscribed_topics(&m), ["orders", "pay"]);
        assert!(subscribed_topics(&[0, 1, 0x7f, 0xff, 0xff, 0xff]).is_empty());
        assert!(subscribed_topics(&[0]).is_empty());
    }
}
