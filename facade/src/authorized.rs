//! KIP-430's authorized operations: what the client may do with a topic, a
//! group or the cluster, as a bit field of ACL operation codes, answered in
//! Metadata, DescribeCluster and DescribeGroups when the request asks.
//!
//! Without an authorizer (or for a super user) every operation a resource
//! type supports is allowed, which is what Kafka answers then; with ACLs,
//! the operations they allow the principal. A request that does not ask
//! gets `i32::MIN` ("not asked"), as from Kafka.

use storage::{Access, AclOperation, ResourceType, CLUSTER_NAME};

use AclOperation::*;

/// The answer to a request that did not ask.
const NOT_ASKED: i32 = i32::MIN;

/// The operations a topic has (Kafka's order does not matter: bits).
const TOPIC: &[AclOperation] = &[
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    DescribeConfigs,
    AlterConfigs,
];
/// The operations a group has.
const GROUP: &[AclOperation] = &[Read, Describe, Delete];
/// The operations the cluster has.
const CLUSTER: &[AclOperation] = &[
    Create,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
];

fn bits(
    asked: bool,
    access: &Access,
    resource_type: ResourceType,
    name: &str,
    operations: &[AclOperation],
) -> i32 {
    if !asked {
        return NOT_ASKED;
    }
    access.operations_bits(resource_type, name, operations)
}

/// What the client may do with topic `name`.
pub(crate) fn topic(asked: bool, access: &Access, name: &str) -> i32 {
    bits(asked, access, ResourceType::Topic, name, TOPIC)
}

/// What the client may do with consumer group `name`.
pub(crate) fn group(asked: bool, access: &Access, name: &str) -> i32 {
    bits(asked, access, ResourceType::Group, name, GROUP)
}

/// What the client may do with the cluster.
pub(crate) fn cluster(asked: bool, access: &Access) -> i32 {
    bits(asked, access, ResourceType::Cluster, CLUSTER_NAME, CLUSTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_kafkas() {
        // Kafka 3.9 without an authorizer: Metadata's topic operations.
        let all = Access::everything();
        assert_eq!(topic(true, &all, "t"), 0b1101_1111_1000);
        assert_eq!(group(true, &all, "g"), (1 << 3) | (1 << 6) | (1 << 8));
        assert_eq!(cluster(true, &all), 0b1_1111_1010_0000);
        assert_eq!(topic(false, &all, "t"), i32::MIN);
    }
}
