//! A structural check of request bodies before `kafka-protocol` decodes them.
//!
//! The codec (0.18.0) sizes every array with `Vec::with_capacity(count)`
//! straight from the wire, before decoding a single element, so a 21-byte
//! Metadata request claiming 2^31 topics asks for ~150 GB and the allocator
//! aborts the whole broker (found by the fuzz target; fixes are pending
//! upstream). This module walks a body along the schema of the request and
//! refuses any array, string or byte count larger than the bytes left in the
//! frame: every element takes at least one byte, so such a count cannot
//! belong to a real request. The schemas cover exactly the APIs of
//! [`crate::versions`]; a test round-trips every version through the codec's
//! encoder to prove they match it.

use kafka_protocol::messages::ApiKey;

use crate::varint;

/// The wire type of a field.
#[derive(Debug, Clone, Copy)]
enum Ty {
    Bool,
    I8,
    I16,
    I32,
    I64,
    Uuid,
    Str,
    Bytes,
    Ints,
    /// An array of INT8 (acknowledgement types).
    I8s,
    Longs,
    Strs,
    Array(&'static [Field]),
}

/// A field and the versions that carry it.
#[derive(Debug, Clone, Copy)]
struct Field(Ty, i16, i16);

const ALL: i16 = i16::MAX;

use Ty::*;

const PRODUCE: &[Field] = &[
    Field(Str, 3, ALL), // transactional_id
    Field(I16, 0, ALL), // acks
    Field(I32, 0, ALL), // timeout_ms
    Field(
        Array(&[
            Field(Str, 0, 12),    // name
            Field(Uuid, 13, ALL), // topic_id
            Field(Array(&[Field(I32, 0, ALL), Field(Bytes, 0, ALL)]), 0, ALL),
        ]),
        0,
        ALL,
    ),
];

const FETCH: &[Field] = &[
    Field(I32, 0, 14),  // replica_id
    Field(I32, 0, ALL), // max_wait_ms
    Field(I32, 0, ALL), // min_bytes
    Field(I32, 3, ALL), // max_bytes
    Field(I8, 4, ALL),  // isolation_level
    Field(I32, 7, ALL), // session_id
    Field(I32, 7, ALL), // session_epoch
    Field(
        Array(&[
            Field(Str, 0, 12),
            Field(Uuid, 13, ALL),
            Field(
                Array(&[
                    Field(I32, 0, ALL),  // partition
                    Field(I32, 9, ALL),  // current_leader_epoch
                    Field(I64, 0, ALL),  // fetch_offset
                    Field(I32, 12, ALL), // last_fetched_epoch
                    Field(I64, 5, ALL),  // log_start_offset
                    Field(I32, 0, ALL),  // partition_max_bytes
                ]),
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ),
    Field(
        Array(&[Field(Str, 7, 12), Field(Uuid, 13, ALL), Field(Ints, 7, ALL)]),
        7,
        ALL,
    ), // forgotten
    Field(Str, 11, ALL), // rack_id
];

const LIST_OFFSETS: &[Field] = &[
    Field(I32, 0, ALL), // replica_id
    Field(I8, 2, ALL),  // isolation_level
    Field(
        Array(&[
            Field(Str, 0, ALL),
            Field(
                Array(&[
                    Field(I32, 0, ALL), // partition_index
                    Field(I32, 4, ALL), // current_leader_epoch
                    Field(I64, 0, ALL), // timestamp
                ]),
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ),
    Field(I32, 10, ALL), // timeout_ms
];

const METADATA: &[Field] = &[
    Field(Array(&[Field(Uuid, 10, ALL), Field(Str, 0, ALL)]), 0, ALL),
    Field(Bool, 4, ALL), // allow_auto_topic_creation
    Field(Bool, 8, 10),  // include_cluster_authorized_operations
    Field(Bool, 8, ALL), // include_topic_authorized_operations
];

const API_VERSIONS: &[Field] = &[Field(Str, 3, ALL), Field(Str, 3, ALL)];

const CREATE_TOPICS: &[Field] = &[
    Field(
        Array(&[
            Field(Str, 0, ALL),                                               // name
            Field(I32, 0, ALL),                                               // num_partitions
            Field(I16, 0, ALL),                                               // replication_factor
            Field(Array(&[Field(I32, 0, ALL), Field(Ints, 0, ALL)]), 0, ALL), // assignments
            Field(Array(&[Field(Str, 0, ALL), Field(Str, 0, ALL)]), 0, ALL),  // configs
        ]),
        0,
        ALL,
    ),
    Field(I32, 0, ALL),  // timeout_ms
    Field(Bool, 1, ALL), // validate_only
];

const DELETE_TOPICS: &[Field] = &[
    Field(Array(&[Field(Str, 6, ALL), Field(Uuid, 6, ALL)]), 6, ALL), // topics
    Field(Strs, 0, 5),                                                // topic_names
    Field(I32, 0, ALL),                                               // timeout_ms
];

const CREATE_PARTITIONS: &[Field] = &[
    Field(
        Array(&[
            Field(Str, 0, ALL),                           // name
            Field(I32, 0, ALL),                           // count
            Field(Array(&[Field(Ints, 0, ALL)]), 0, ALL), // assignments
        ]),
        0,
        ALL,
    ),
    Field(I32, 0, ALL),  // timeout_ms
    Field(Bool, 0, ALL), // validate_only
];

const DESCRIBE_CONFIGS: &[Field] = &[
    Field(
        Array(&[Field(I8, 0, ALL), Field(Str, 0, ALL), Field(Strs, 0, ALL)]),
        0,
        ALL,
    ),
    Field(Bool, 1, ALL), // include_synonyms
    Field(Bool, 3, ALL), // include_documentation
];

const ALTER_CONFIGS: &[Field] = &[
    Field(
        Array(&[
            Field(I8, 0, ALL),                                               // resource_type
            Field(Str, 0, ALL),                                              // resource_name
            Field(Array(&[Field(Str, 0, ALL), Field(Str, 0, ALL)]), 0, ALL), // configs
        ]),
        0,
        ALL,
    ),
    Field(Bool, 0, ALL), // validate_only
];

const INCREMENTAL_ALTER_CONFIGS: &[Field] = &[
    Field(
        Array(&[
            Field(I8, 0, ALL),  // resource_type
            Field(Str, 0, ALL), // resource_name
            Field(
                Array(&[Field(Str, 0, ALL), Field(I8, 0, ALL), Field(Str, 0, ALL)]),
                0,
                ALL,
            ), // configs: name, operation, value
        ]),
        0,
        ALL,
    ),
    Field(Bool, 0, ALL), // validate_only
];

const DESCRIBE_CLUSTER: &[Field] = &[Field(Bool, 0, ALL), Field(I8, 1, ALL), Field(Bool, 2, ALL)];

const OFFSET_FOR_LEADER_EPOCH: &[Field] = &[
    Field(I32, 3, ALL), // replica_id
    Field(
        Array(&[
            Field(Str, 0, ALL),
            Field(
                Array(&[Field(I32, 0, ALL), Field(I32, 2, ALL), Field(I32, 0, ALL)]),
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ),
];

const INIT_PRODUCER_ID: &[Field] = &[
    Field(Str, 0, ALL), // transactional_id
    Field(I32, 0, ALL), // transaction_timeout_ms
    Field(I64, 3, ALL), // producer_id
    Field(I16, 3, ALL), // producer_epoch
];

const TXN_TOPICS: &[Field] = &[
    Field(Str, 0, ALL),  // name
    Field(Ints, 0, ALL), // partitions
];

const ADD_PARTITIONS_TO_TXN: &[Field] = &[
    Field(
        Array(&[
            Field(Str, 0, ALL),               // transactional_id
            Field(I64, 0, ALL),               // producer_id
            Field(I16, 0, ALL),               // producer_epoch
            Field(Bool, 0, ALL),              // verify_only
            Field(Array(TXN_TOPICS), 0, ALL), // topics
        ]),
        4,
        ALL,
    ), // transactions
    Field(Str, 0, 3),               // transactional_id
    Field(I64, 0, 3),               // producer_id
    Field(I16, 0, 3),               // producer_epoch
    Field(Array(TXN_TOPICS), 0, 3), // topics
];

const ADD_OFFSETS_TO_TXN: &[Field] = &[
    Field(Str, 0, ALL), // transactional_id
    Field(I64, 0, ALL), // producer_id
    Field(I16, 0, ALL), // producer_epoch
    Field(Str, 0, ALL), // group_id
];

const END_TXN: &[Field] = &[
    Field(Str, 0, ALL),  // transactional_id
    Field(I64, 0, ALL),  // producer_id
    Field(I16, 0, ALL),  // producer_epoch
    Field(Bool, 0, ALL), // committed
];

const TXN_OFFSET_COMMIT: &[Field] = &[
    Field(Str, 0, ALL), // transactional_id
    Field(Str, 0, ALL), // group_id
    Field(I64, 0, ALL), // producer_id
    Field(I16, 0, ALL), // producer_epoch
    Field(I32, 3, ALL), // generation_id
    Field(Str, 3, ALL), // member_id
    Field(Str, 3, ALL), // group_instance_id
    Field(
        Array(&[
            Field(Str, 0, ALL), // name
            Field(
                Array(&[
                    Field(I32, 0, ALL), // partition_index
                    Field(I64, 0, ALL), // committed_offset
                    Field(I32, 2, ALL), // committed_leader_epoch
                    Field(Str, 0, ALL), // committed_metadata
                ]),
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ), // topics
];

const DESCRIBE_TRANSACTIONS: &[Field] = &[Field(Strs, 0, ALL)]; // transactional_ids

const LIST_TRANSACTIONS: &[Field] = &[
    Field(Strs, 0, ALL),  // state_filters
    Field(Longs, 0, ALL), // producer_id_filters
    Field(I64, 1, ALL),   // duration_filter
    Field(Str, 2, ALL),   // transactional_id_pattern
];

const DESCRIBE_PRODUCERS: &[Field] = &[Field(
    Array(&[Field(Str, 0, ALL), Field(Ints, 0, ALL)]),
    0,
    ALL,
)];

const DESCRIBE_LOG_DIRS: &[Field] = &[Field(
    Array(&[Field(Str, 0, ALL), Field(Ints, 0, ALL)]), // topic, partitions
    0,
    ALL,
)];

const ELECT_LEADERS: &[Field] = &[
    Field(I8, 1, ALL),                                                // election_type
    Field(Array(&[Field(Str, 0, ALL), Field(Ints, 0, ALL)]), 0, ALL), // topic_partitions
    Field(I32, 0, ALL),                                               // timeout_ms
];

const ALTER_PARTITION_REASSIGNMENTS: &[Field] = &[
    Field(I32, 0, ALL),  // timeout_ms
    Field(Bool, 1, ALL), // allow_replication_factor_change
    Field(
        Array(&[
            Field(Str, 0, ALL),                                               // name
            Field(Array(&[Field(I32, 0, ALL), Field(Ints, 0, ALL)]), 0, ALL), // partitions: index, replicas
        ]),
        0,
        ALL,
    ),
];

const LIST_PARTITION_REASSIGNMENTS: &[Field] = &[
    Field(I32, 0, ALL),                                               // timeout_ms
    Field(Array(&[Field(Str, 0, ALL), Field(Ints, 0, ALL)]), 0, ALL), // topics
];

const FIND_COORDINATOR: &[Field] = &[
    Field(Str, 0, 3),    // key
    Field(I8, 1, ALL),   // key_type
    Field(Strs, 4, ALL), // coordinator_keys
];

const OFFSET_COMMIT: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(I32, 1, ALL), // generation_id_or_member_epoch
    Field(Str, 1, ALL), // member_id
    Field(Str, 7, ALL), // group_instance_id
    Field(I64, 2, 4),   // retention_time_ms
    Field(
        Array(&[
            Field(Str, 0, ALL),
            Field(
                Array(&[
                    Field(I32, 0, ALL), // partition_index
                    Field(I64, 0, ALL), // committed_offset
                    Field(I32, 6, ALL), // committed_leader_epoch
                    Field(I64, 1, 1),   // commit_timestamp
                    Field(Str, 0, ALL), // committed_metadata
                ]),
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ),
];

const OFFSET_FETCH: &[Field] = &[
    Field(Str, 0, 7), // group_id
    Field(Array(&[Field(Str, 0, ALL), Field(Ints, 0, ALL)]), 0, 7),
    Field(
        Array(&[
            Field(Str, 8, ALL), // group_id
            Field(Str, 9, ALL), // member_id
            Field(I32, 9, ALL), // member_epoch
            Field(Array(&[Field(Str, 8, ALL), Field(Ints, 8, ALL)]), 8, ALL),
        ]),
        8,
        ALL,
    ),
    Field(Bool, 7, ALL), // require_stable
];

const JOIN_GROUP: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(I32, 0, ALL), // session_timeout_ms
    Field(I32, 1, ALL), // rebalance_timeout_ms
    Field(Str, 0, ALL), // member_id
    Field(Str, 5, ALL), // group_instance_id
    Field(Str, 0, ALL), // protocol_type
    Field(
        Array(&[
            Field(Str, 0, ALL),   // name
            Field(Bytes, 0, ALL), // metadata
        ]),
        0,
        ALL,
    ), // protocols
    Field(Str, 8, ALL), // reason
];

const SYNC_GROUP: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(I32, 0, ALL), // generation_id
    Field(Str, 0, ALL), // member_id
    Field(Str, 3, ALL), // group_instance_id
    Field(Str, 5, ALL), // protocol_type
    Field(Str, 5, ALL), // protocol_name
    Field(
        Array(&[
            Field(Str, 0, ALL),   // member_id
            Field(Bytes, 0, ALL), // assignment
        ]),
        0,
        ALL,
    ), // assignments
];

const HEARTBEAT: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(I32, 0, ALL), // generation_id
    Field(Str, 0, ALL), // member_id
    Field(Str, 3, ALL), // group_instance_id
];

const LEAVE_GROUP: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(Str, 0, 2),   // member_id
    Field(
        Array(&[
            Field(Str, 3, ALL), // member_id
            Field(Str, 3, ALL), // group_instance_id
            Field(Str, 5, ALL), // reason
        ]),
        3,
        ALL,
    ), // members
];

const LIST_GROUPS: &[Field] = &[
    Field(Strs, 4, ALL), // states_filter
    Field(Strs, 5, ALL), // types_filter
];

const DESCRIBE_GROUPS: &[Field] = &[
    Field(Strs, 0, ALL), // groups
    Field(Bool, 3, ALL), // include_authorized_operations
];

const DELETE_GROUPS: &[Field] = &[Field(Strs, 0, ALL)]; // groups_names

const OFFSET_DELETE: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(
        Array(&[
            Field(Str, 0, ALL),                          // name
            Field(Array(&[Field(I32, 0, ALL)]), 0, ALL), // partitions: partition_index
        ]),
        0,
        ALL,
    ),
];

const DELETE_RECORDS: &[Field] = &[
    Field(
        Array(&[
            Field(Str, 0, ALL), // name
            Field(
                Array(&[Field(I32, 0, ALL), Field(I64, 0, ALL)]), // partition_index, offset
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ),
    Field(I32, 0, ALL), // timeout_ms
];

const SASL_HANDSHAKE: &[Field] = &[Field(Str, 0, ALL)]; // mechanism

const SASL_AUTHENTICATE: &[Field] = &[Field(Bytes, 0, ALL)]; // auth_bytes

const DESCRIBE_USER_SCRAM_CREDENTIALS: &[Field] = &[Field(Array(&[Field(Str, 0, ALL)]), 0, ALL)];

const ALTER_USER_SCRAM_CREDENTIALS: &[Field] = &[
    Field(Array(&[Field(Str, 0, ALL), Field(I8, 0, ALL)]), 0, ALL), // deletions
    Field(
        Array(&[
            Field(Str, 0, ALL),   // name
            Field(I8, 0, ALL),    // mechanism
            Field(I32, 0, ALL),   // iterations
            Field(Bytes, 0, ALL), // salt
            Field(Bytes, 0, ALL), // salted_password
        ]),
        0,
        ALL,
    ), // upsertions
];

/// An ACL binding or filter: resource type, name, pattern type (v1+),
/// principal, host, operation, permission.
const ACL: &[Field] = &[
    Field(I8, 0, ALL),
    Field(Str, 0, ALL),
    Field(I8, 1, ALL),
    Field(Str, 0, ALL),
    Field(Str, 0, ALL),
    Field(I8, 0, ALL),
    Field(I8, 0, ALL),
];

const CREATE_ACLS: &[Field] = &[Field(Array(ACL), 0, ALL)]; // creations

const DELETE_ACLS: &[Field] = &[Field(Array(ACL), 0, ALL)]; // filters

/// The schema of a request body and the first flexible version of its API.
const CONSUMER_GROUP_HEARTBEAT: &[Field] = &[
    Field(Str, 0, ALL),                                                // group_id
    Field(Str, 0, ALL),                                                // member_id
    Field(I32, 0, ALL),                                                // member_epoch
    Field(Str, 0, ALL),                                                // instance_id
    Field(Str, 0, ALL),                                                // rack_id
    Field(I32, 0, ALL),                                                // rebalance_timeout_ms
    Field(Strs, 0, ALL),                                               // subscribed_topic_names
    Field(Str, 1, ALL),                                                // subscribed_topic_regex
    Field(Str, 0, ALL),                                                // server_assignor
    Field(Array(&[Field(Uuid, 0, ALL), Field(Ints, 0, ALL)]), 0, ALL), // topic_partitions
];

const CONSUMER_GROUP_DESCRIBE: &[Field] = &[
    Field(Strs, 0, ALL), // group_ids
    Field(Bool, 0, ALL), // include_authorized_operations
];

const SHARE_GROUP_HEARTBEAT: &[Field] = &[
    Field(Str, 0, ALL),  // group_id
    Field(Str, 0, ALL),  // member_id
    Field(I32, 0, ALL),  // member_epoch
    Field(Str, 0, ALL),  // rack_id
    Field(Strs, 0, ALL), // subscribed_topic_names
];

const SHARE_GROUP_DESCRIBE: &[Field] = &[
    Field(Strs, 0, ALL), // group_ids
    Field(Bool, 0, ALL), // include_authorized_operations
];

/// Acknowledgement batches: first and last offset, one type or one per offset.
const ACKNOWLEDGEMENT_BATCH: &[Field] =
    &[Field(I64, 0, ALL), Field(I64, 0, ALL), Field(I8s, 0, ALL)];

const SHARE_FETCH: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(Str, 0, ALL), // member_id
    Field(I32, 0, ALL), // share_session_epoch
    Field(I32, 0, ALL), // max_wait_ms
    Field(I32, 0, ALL), // min_bytes
    Field(I32, 0, ALL), // max_bytes
    Field(I32, 1, ALL), // max_records
    Field(I32, 1, ALL), // batch_size
    Field(
        Array(&[
            Field(Uuid, 0, ALL), // topic_id
            Field(
                Array(&[
                    Field(I32, 0, ALL), // partition_index
                    Field(I32, 0, 0),   // partition_max_bytes
                    Field(Array(ACKNOWLEDGEMENT_BATCH), 0, ALL),
                ]),
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ),
    Field(Array(&[Field(Uuid, 0, ALL), Field(Ints, 0, ALL)]), 0, ALL), // forgotten
];

const SHARE_ACKNOWLEDGE: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(Str, 0, ALL), // member_id
    Field(I32, 0, ALL), // share_session_epoch
    Field(
        Array(&[
            Field(Uuid, 0, ALL), // topic_id
            Field(
                Array(&[
                    Field(I32, 0, ALL), // partition_index
                    Field(Array(ACKNOWLEDGEMENT_BATCH), 0, ALL),
                ]),
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ),
];

const DESCRIBE_SHARE_GROUP_OFFSETS: &[Field] = &[Field(
    Array(&[
        Field(Str, 0, ALL), // group_id
        Field(
            Array(&[
                Field(Str, 0, ALL),  // topic_name
                Field(Ints, 0, ALL), // partitions
            ]),
            0,
            ALL,
        ),
    ]),
    0,
    ALL,
)];

const ALTER_SHARE_GROUP_OFFSETS: &[Field] = &[
    Field(Str, 0, ALL), // group_id
    Field(
        Array(&[
            Field(Str, 0, ALL), // topic_name
            Field(
                Array(&[Field(I32, 0, ALL), Field(I64, 0, ALL)]), // partition_index, start_offset
                0,
                ALL,
            ),
        ]),
        0,
        ALL,
    ),
];

const DELETE_SHARE_GROUP_OFFSETS: &[Field] = &[
    Field(Str, 0, ALL),                          // group_id
    Field(Array(&[Field(Str, 0, ALL)]), 0, ALL), // topics: topic_name
];

fn schema(api: ApiKey) -> Option<(&'static [Field], i16)> {
    Some(match api {
        ApiKey::Produce => (PRODUCE, 9),
        ApiKey::Fetch => (FETCH, 12),
        ApiKey::ListOffsets => (LIST_OFFSETS, 6),
        ApiKey::Metadata => (METADATA, 9),
        ApiKey::ApiVersions => (API_VERSIONS, 3),
        ApiKey::CreateTopics => (CREATE_TOPICS, 5),
        ApiKey::DeleteTopics => (DELETE_TOPICS, 4),
        ApiKey::CreatePartitions => (CREATE_PARTITIONS, 2),
        ApiKey::DescribeConfigs => (DESCRIBE_CONFIGS, 4),
        ApiKey::AlterConfigs => (ALTER_CONFIGS, 2),
        ApiKey::IncrementalAlterConfigs => (INCREMENTAL_ALTER_CONFIGS, 1),
        ApiKey::DescribeCluster => (DESCRIBE_CLUSTER, 0),
        ApiKey::OffsetForLeaderEpoch => (OFFSET_FOR_LEADER_EPOCH, 4),
        ApiKey::InitProducerId => (INIT_PRODUCER_ID, 2),
        ApiKey::DescribeProducers => (DESCRIBE_PRODUCERS, 0),
        ApiKey::DescribeLogDirs => (DESCRIBE_LOG_DIRS, 2),
        ApiKey::ElectLeaders => (ELECT_LEADERS, 2),
        ApiKey::AlterPartitionReassignments => (ALTER_PARTITION_REASSIGNMENTS, 0),
        ApiKey::ListPartitionReassignments => (LIST_PARTITION_REASSIGNMENTS, 0),
        ApiKey::FindCoordinator => (FIND_COORDINATOR, 3),
        ApiKey::OffsetCommit => (OFFSET_COMMIT, 8),
        ApiKey::OffsetFetch => (OFFSET_FETCH, 6),
        ApiKey::JoinGroup => (JOIN_GROUP, 6),
        ApiKey::SyncGroup => (SYNC_GROUP, 4),
        ApiKey::Heartbeat => (HEARTBEAT, 4),
        ApiKey::LeaveGroup => (LEAVE_GROUP, 4),
        ApiKey::ListGroups => (LIST_GROUPS, 3),
        ApiKey::DescribeGroups => (DESCRIBE_GROUPS, 5),
        ApiKey::DeleteGroups => (DELETE_GROUPS, 2),
        ApiKey::OffsetDelete => (OFFSET_DELETE, ALL), // never flexible
        ApiKey::DeleteRecords => (DELETE_RECORDS, 2),
        ApiKey::SaslHandshake => (SASL_HANDSHAKE, ALL), // never flexible
        ApiKey::SaslAuthenticate => (SASL_AUTHENTICATE, 2),
        ApiKey::DescribeUserScramCredentials => (DESCRIBE_USER_SCRAM_CREDENTIALS, 0),
        ApiKey::AlterUserScramCredentials => (ALTER_USER_SCRAM_CREDENTIALS, 0),
        ApiKey::DescribeAcls => (ACL, 2),
        ApiKey::CreateAcls => (CREATE_ACLS, 2),
        ApiKey::DeleteAcls => (DELETE_ACLS, 2),
        ApiKey::AddPartitionsToTxn => (ADD_PARTITIONS_TO_TXN, 3),
        ApiKey::AddOffsetsToTxn => (ADD_OFFSETS_TO_TXN, 3),
        ApiKey::EndTxn => (END_TXN, 3),
        ApiKey::TxnOffsetCommit => (TXN_OFFSET_COMMIT, 3),
        ApiKey::DescribeTransactions => (DESCRIBE_TRANSACTIONS, 0),
        ApiKey::ListTransactions => (LIST_TRANSACTIONS, 0),
        ApiKey::ConsumerGroupHeartbeat => (CONSUMER_GROUP_HEARTBEAT, 0),
        ApiKey::ConsumerGroupDescribe => (CONSUMER_GROUP_DESCRIBE, 0),
        ApiKey::ShareGroupHeartbeat => (SHARE_GROUP_HEARTBEAT, 0),
        ApiKey::ShareGroupDescribe => (SHARE_GROUP_DESCRIBE, 0),
        ApiKey::ShareFetch => (SHARE_FETCH, 0),
        ApiKey::ShareAcknowledge => (SHARE_ACKNOWLEDGE, 0),
        ApiKey::DescribeShareGroupOffsets => (DESCRIBE_SHARE_GROUP_OFFSETS, 0),
        ApiKey::AlterShareGroupOffsets => (ALTER_SHARE_GROUP_OFFSETS, 0),
        ApiKey::DeleteShareGroupOffsets => (DELETE_SHARE_GROUP_OFFSETS, 0),
        _ => return None,
    })
}

/// Checks that no count in `body` (a request of `api` at `version`, after
/// its header) exceeds the bytes left. Returns how many bytes the schema
/// covers, or what is wrong.
pub(crate) fn check(api: ApiKey, version: i16, body: &[u8]) -> Result<usize, String> {
    let (fields, flexible_from) = schema(api).ok_or_else(|| format!("no schema for {api:?}"))?;
    let mut walk = Walk {
        buf: body,
        pos: 0,
        version,
        flexible: version >= flexible_from,
    };
    walk.fields(fields)?;
    Ok(walk.pos)
}

struct Walk<'a> {
    buf: &'a [u8],
    pos: usize,
    version: i16,
    flexible: bool,
}

impl Walk<'_> {
    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn skip(&mut self, n: usize) -> Result<(), String> {
        if n > self.left() {
            return Err(format!("{n} bytes claimed where {} are left", self.left()));
        }
        self.pos += n;
        Ok(())
    }

    fn int(&mut self, n: usize) -> Result<i64, String> {
        let bytes = self
            .buf
            .get(self.pos..self.pos + n)
            .ok_or("truncated integer")?;
        self.pos += n;
        Ok(
            bytes.iter().fold(0i64, |v, &b| (v << 8) | i64::from(b)) << (64 - 8 * n)
                >> (64 - 8 * n),
        )
    }

    /// An unsigned varint of a flexible version (a 32-bit value, so at
    /// most 5 bytes).
    fn uvarint(&mut self) -> Result<u64, String> {
        let (v, len) = varint::unsigned(&self.buf[self.pos..], varint::MAX_LEN_32)
            .map_err(|e| e.to_string())?;
        self.pos += len;
        Ok(v)
    }

    /// A length or count: `None` for null; refused when larger than what is left.
    fn count(&mut self, width: usize) -> Result<Option<usize>, String> {
        let n = if self.flexible {
            self.uvarint()?.checked_sub(1).map(|n| n as i64)
        } else {
            Some(self.int(width)?).filter(|&n| n >= 0)
        };
        match n {
            None => Ok(None),
            Some(n) if n as u64 <= self.left() as u64 => Ok(Some(n as usize)),
            Some(n) => Err(format!("a count of {n} with {} bytes left", self.left())),
        }
    }

    fn fields(&mut self, fields: &[Field]) -> Result<(), String> {
        for &Field(ty, min, max) in fields {
            if (min..=max).contains(&self.version) {
                self.field(ty)?;
            }
        }
        if self.flexible {
            let tagged = self.count_tagged()?;
            for _ in 0..tagged {
                self.uvarint()?;
                let size = self.uvarint()?;
                self.skip(usize::try_from(size).map_err(|_| "tagged field size")?)?;
            }
        }
        Ok(())
    }

    fn count_tagged(&mut self) -> Result<u64, String> {
        let n = self.uvarint()?;
        if n > self.left() as u64 {
            return Err(format!("{n} tagged fields with {} bytes left", self.left()));
        }
        Ok(n)
    }

    fn field(&mut self, ty: Ty) -> Result<(), String> {
        match ty {
            Bool | I8 => self.skip(1),
            I16 => self.skip(2),
            I32 => self.skip(4),
            I64 => self.skip(8),
            Uuid => self.skip(16),
            Str => match self.count(2)? {
                Some(n) => self.skip(n),
                None => Ok(()),
            },
            Bytes => match self.count(4)? {
                Some(n) => self.skip(n),
                None => Ok(()),
            },
            Ints => self.repeat(|w| w.field(I32)),
            I8s => self.repeat(|w| w.field(I8)),
            Longs => self.repeat(|w| w.field(I64)),
            Strs => self.repeat(|w| w.field(Str)),
            Array(fields) => self.repeat(|w| w.fields(fields)),
        }
    }

    fn repeat(
        &mut self,
        mut each: impl FnMut(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        if let Some(n) = self.count(4)? {
            for _ in 0..n {
                each(self)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
