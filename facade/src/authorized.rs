//! KIP-430's authorized operations: what the client may do with a topic, a
//! group or the cluster, as a bit field of ACL operation codes, answered in
//! Metadata, DescribeCluster and DescribeGroups when the request asks.
//!
//! There is no authorizer yet, so every operation a resource type supports
//! is allowed, which is what Kafka answers without an authorizer. A request
//! that does not ask gets `i32::MIN` ("not asked"), as from Kafka.

/// The answer to a request that did not ask.
const NOT_ASKED: i32 = i32::MIN;

// ACL operation codes (Kafka's `AclOperation`).
const READ: u8 = 3;
const WRITE: u8 = 4;
const CREATE: u8 = 5;
const DELETE: u8 = 6;
const ALTER: u8 = 7;
const DESCRIBE: u8 = 8;
const CLUSTER_ACTION: u8 = 9;
const DESCRIBE_CONFIGS: u8 = 10;
const ALTER_CONFIGS: u8 = 11;
const IDEMPOTENT_WRITE: u8 = 12;

fn bits(asked: bool, operations: &[u8]) -> i32 {
    if !asked {
        return NOT_ASKED;
    }
    operations.iter().fold(0, |bits, op| bits | 1 << op)
}

/// What the client may do with a topic.
pub(crate) fn topic(asked: bool) -> i32 {
    bits(
        asked,
        &[
            READ,
            WRITE,
            CREATE,
            DELETE,
            ALTER,
            DESCRIBE,
            DESCRIBE_CONFIGS,
            ALTER_CONFIGS,
        ],
    )
}

/// What the client may do with a consumer group.
pub(crate) fn group(asked: bool) -> i32 {
    bits(asked, &[READ, DESCRIBE, DELETE])
}

/// What the client may do with the cluster.
pub(crate) fn cluster(asked: bool) -> i32 {
    bits(
        asked,
        &[
            CREATE,
            ALTER,
            DESCRIBE,
            CLUSTER_ACTION,
            DESCRIBE_CONFIGS,
            ALTER_CONFIGS,
            IDEMPOTENT_WRITE,
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_kafkas() {
        // Kafka 3.9 without an authorizer: Metadata's topic operations.
        assert_eq!(topic(true), 0b1101_1111_1000);
        assert_eq!(group(true), (1 << 3) | (1 << 6) | (1 << 8));
        assert_eq!(cluster(true), 0b1_1111_1010_0000);
        assert_eq!(topic(false), i32::MIN);
    }
}
