//! Every schema checked against the codec's encoder at every version, and
//! impossible counts refused.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};

use super::*;
use crate::versions::SUPPORTED;

fn two<T: Clone>(v: T) -> Vec<T> {
    vec![v.clone(), v]
}

fn name(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// A request of `api` with two elements in every array, so every
/// field of the schema is exercised.
fn sample(api: ApiKey, version: i16) -> BytesMut {
    let mut buf = BytesMut::new();
    let topic = TopicName(name("t"));
    let result = match api {
        ApiKey::Produce => {
            use produce_request::*;
            let partition = PartitionProduceData::default()
                .with_index(1)
                .with_records(Some(Bytes::from_static(b"xyz")));
            let mut t = TopicProduceData::default().with_partition_data(two(partition));
            if version >= 13 {
                t.topic_id = uuid::Uuid::new_v4();
            } else {
                t.name = topic.clone();
            }
            ProduceRequest::default()
                .with_transactional_id(Some(TransactionalId(name("tx"))))
                .with_topic_data(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::Fetch => {
            use fetch_request::*;
            let mut t = FetchTopic::default().with_partitions(two(FetchPartition::default()));
            let mut f = ForgottenTopic::default().with_partitions(vec![1, 2]);
            if version >= 13 {
                t.topic_id = uuid::Uuid::new_v4();
                f.topic_id = uuid::Uuid::new_v4();
            } else {
                t.topic = topic.clone();
                f.topic = topic.clone();
            }
            let mut r = FetchRequest::default().with_topics(two(t));
            if version >= 7 {
                r.forgotten_topics_data = two(f);
            }
            if version >= 11 {
                r.rack_id = name("rack");
            }
            if version >= 12 {
                r.cluster_id = Some(name("c"));
            }
            r.encode(&mut buf, version)
        }
        ApiKey::ListOffsets => {
            use list_offsets_request::*;
            let t = ListOffsetsTopic::default()
                .with_name(topic.clone())
                .with_partitions(two(ListOffsetsPartition::default()));
            ListOffsetsRequest::default()
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::Metadata => {
            let t =
                metadata_request::MetadataRequestTopic::default().with_name(Some(topic.clone()));
            MetadataRequest::default()
                .with_topics(Some(two(t)))
                .encode(&mut buf, version)
        }
        ApiKey::ApiVersions => {
            let mut r = ApiVersionsRequest::default();
            if version >= 3 {
                r.client_software_name = name("n");
                r.client_software_version = name("1");
            }
            r.encode(&mut buf, version)
        }
        ApiKey::CreateTopics => {
            use create_topics_request::*;
            let a = CreatableReplicaAssignment::default()
                .with_broker_ids(vec![BrokerId(1), BrokerId(2)]);
            let c = CreatableTopicConfig::default()
                .with_name(name("k"))
                .with_value(Some(name("v")));
            let t = CreatableTopic::default()
                .with_name(topic.clone())
                .with_assignments(two(a))
                .with_configs(two(c));
            CreateTopicsRequest::default()
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::DeleteTopics => {
            let mut r = DeleteTopicsRequest::default();
            if version >= 6 {
                r.topics = two(delete_topics_request::DeleteTopicState::default()
                    .with_name(Some(topic.clone())));
            } else {
                r.topic_names = two(topic.clone());
            }
            r.encode(&mut buf, version)
        }
        ApiKey::CreatePartitions => {
            use create_partitions_request::*;
            let a = CreatePartitionsAssignment::default().with_broker_ids(vec![BrokerId(1)]);
            let t = CreatePartitionsTopic::default()
                .with_name(topic.clone())
                .with_assignments(Some(two(a)));
            CreatePartitionsRequest::default()
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::DescribeConfigs => {
            let res = describe_configs_request::DescribeConfigsResource::default()
                .with_resource_name(name("t"))
                .with_configuration_keys(Some(vec![name("a"), name("b")]));
            DescribeConfigsRequest::default()
                .with_resources(two(res))
                .encode(&mut buf, version)
        }
        ApiKey::AlterConfigs => {
            use alter_configs_request::*;
            let c = AlterableConfig::default()
                .with_name(name("k"))
                .with_value(Some(name("v")));
            let res = AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(name("t"))
                .with_configs(two(c));
            AlterConfigsRequest::default()
                .with_resources(two(res))
                .with_validate_only(true)
                .encode(&mut buf, version)
        }
        ApiKey::IncrementalAlterConfigs => {
            use incremental_alter_configs_request::*;
            let c = AlterableConfig::default()
                .with_name(name("k"))
                .with_config_operation(2)
                .with_value(Some(name("v")));
            let res = AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(name("t"))
                .with_configs(two(c));
            IncrementalAlterConfigsRequest::default()
                .with_resources(two(res))
                .with_validate_only(true)
                .encode(&mut buf, version)
        }
        ApiKey::DescribeCluster => DescribeClusterRequest::default().encode(&mut buf, version),
        ApiKey::OffsetForLeaderEpoch => {
            use offset_for_leader_epoch_request::*;
            let t = OffsetForLeaderTopic::default()
                .with_topic(topic.clone())
                .with_partitions(two(OffsetForLeaderPartition::default()));
            OffsetForLeaderEpochRequest::default()
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::InitProducerId => InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(name("tx"))))
            .encode(&mut buf, version),
        ApiKey::DescribeProducers => {
            let t = describe_producers_request::TopicRequest::default()
                .with_name(topic.clone())
                .with_partition_indexes(vec![0, 1]);
            DescribeProducersRequest::default()
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::DescribeLogDirs => {
            let t = describe_log_dirs_request::DescribableLogDirTopic::default()
                .with_topic(topic.clone())
                .with_partitions(vec![0, 1]);
            DescribeLogDirsRequest::default()
                .with_topics(Some(two(t)))
                .encode(&mut buf, version)
        }
        ApiKey::ElectLeaders => {
            let t = elect_leaders_request::TopicPartitions::default()
                .with_topic(topic.clone())
                .with_partitions(vec![0, 1]);
            let mut r = ElectLeadersRequest::default().with_topic_partitions(Some(two(t)));
            if version >= 1 {
                r.election_type = 1;
            }
            r.encode(&mut buf, version)
        }
        ApiKey::AlterPartitionReassignments => {
            use alter_partition_reassignments_request::*;
            let p = ReassignablePartition::default()
                .with_partition_index(1)
                .with_replicas(Some(vec![BrokerId(1), BrokerId(2)]));
            let t = ReassignableTopic::default()
                .with_name(topic.clone())
                .with_partitions(two(p));
            AlterPartitionReassignmentsRequest::default()
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::ListPartitionReassignments => {
            let t =
                list_partition_reassignments_request::ListPartitionReassignmentsTopics::default()
                    .with_name(topic.clone())
                    .with_partition_indexes(vec![0, 1]);
            ListPartitionReassignmentsRequest::default()
                .with_topics(Some(two(t)))
                .encode(&mut buf, version)
        }
        ApiKey::FindCoordinator => {
            let mut r = FindCoordinatorRequest::default();
            if version >= 4 {
                r.coordinator_keys = vec![name("g1"), name("g2")];
            } else {
                r.key = name("g");
            }
            r.encode(&mut buf, version)
        }
        ApiKey::OffsetCommit => {
            use offset_commit_request::*;
            let p =
                OffsetCommitRequestPartition::default().with_committed_metadata(Some(name("m")));
            let t = OffsetCommitRequestTopic::default()
                .with_name(topic.clone())
                .with_partitions(two(p));
            let mut r = OffsetCommitRequest::default()
                .with_group_id(GroupId(name("g")))
                .with_topics(two(t));
            if version >= 7 {
                r.group_instance_id = Some(name("i"));
            }
            r.encode(&mut buf, version)
        }
        ApiKey::OffsetFetch => {
            use offset_fetch_request::*;
            let mut r = OffsetFetchRequest::default();
            if version >= 8 {
                let t = OffsetFetchRequestTopics::default()
                    .with_name(topic.clone())
                    .with_partition_indexes(vec![0, 1]);
                let mut g = OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(name("g")))
                    .with_topics(Some(two(t)));
                if version >= 9 {
                    g.member_id = Some(name("m"));
                }
                r.groups = two(g);
            } else {
                r.group_id = GroupId(name("g"));
                let t = OffsetFetchRequestTopic::default()
                    .with_name(topic.clone())
                    .with_partition_indexes(vec![0, 1]);
                r.topics = Some(two(t));
            }
            r.encode(&mut buf, version)
        }
        ApiKey::JoinGroup => {
            let p = join_group_request::JoinGroupRequestProtocol::default()
                .with_name(name("range"))
                .with_metadata(Bytes::from_static(b"xyz"));
            let mut r = JoinGroupRequest::default()
                .with_group_id(GroupId(name("g")))
                .with_member_id(name("m"))
                .with_protocol_type(name("consumer"))
                .with_protocols(two(p));
            if version >= 5 {
                r.group_instance_id = Some(name("i"));
            }
            if version >= 8 {
                r.reason = Some(name("r"));
            }
            r.encode(&mut buf, version)
        }
        ApiKey::SyncGroup => {
            let a = sync_group_request::SyncGroupRequestAssignment::default()
                .with_member_id(name("m"))
                .with_assignment(Bytes::from_static(b"xyz"));
            let mut r = SyncGroupRequest::default()
                .with_group_id(GroupId(name("g")))
                .with_member_id(name("m"))
                .with_assignments(two(a));
            if version >= 3 {
                r.group_instance_id = Some(name("i"));
            }
            if version >= 5 {
                r.protocol_type = Some(name("consumer"));
                r.protocol_name = Some(name("range"));
            }
            r.encode(&mut buf, version)
        }
        ApiKey::Heartbeat => {
            let mut r = HeartbeatRequest::default()
                .with_group_id(GroupId(name("g")))
                .with_member_id(name("m"));
            if version >= 3 {
                r.group_instance_id = Some(name("i"));
            }
            r.encode(&mut buf, version)
        }
        ApiKey::LeaveGroup => {
            let mut r = LeaveGroupRequest::default().with_group_id(GroupId(name("g")));
            if version >= 3 {
                let mut m = leave_group_request::MemberIdentity::default()
                    .with_member_id(name("m"))
                    .with_group_instance_id(Some(name("i")));
                if version >= 5 {
                    m.reason = Some(name("r"));
                }
                r.members = two(m);
            } else {
                r.member_id = name("m");
            }
            r.encode(&mut buf, version)
        }
        ApiKey::ListGroups => {
            let mut r = ListGroupsRequest::default();
            if version >= 4 {
                r.states_filter = vec![name("Stable"), name("Empty")];
            }
            if version >= 5 {
                r.types_filter = vec![name("classic"), name("consumer")];
            }
            r.encode(&mut buf, version)
        }
        ApiKey::DescribeGroups => DescribeGroupsRequest::default()
            .with_groups(vec![GroupId(name("g1")), GroupId(name("g2"))])
            .with_include_authorized_operations(version >= 3)
            .encode(&mut buf, version),
        ApiKey::DeleteGroups => DeleteGroupsRequest::default()
            .with_groups_names(vec![GroupId(name("g1")), GroupId(name("g2"))])
            .encode(&mut buf, version),
        ApiKey::OffsetDelete => {
            use offset_delete_request::*;
            let p = OffsetDeleteRequestPartition::default().with_partition_index(1);
            let t = OffsetDeleteRequestTopic::default()
                .with_name(topic.clone())
                .with_partitions(two(p));
            OffsetDeleteRequest::default()
                .with_group_id(GroupId(name("g")))
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::DeleteRecords => {
            use delete_records_request::*;
            let p = DeleteRecordsPartition::default()
                .with_partition_index(1)
                .with_offset(42);
            let t = DeleteRecordsTopic::default()
                .with_name(topic.clone())
                .with_partitions(two(p));
            DeleteRecordsRequest::default()
                .with_topics(two(t))
                .with_timeout_ms(500)
                .encode(&mut buf, version)
        }
        ApiKey::SaslHandshake => SaslHandshakeRequest::default()
            .with_mechanism(name("SCRAM-SHA-512"))
            .encode(&mut buf, version),
        ApiKey::SaslAuthenticate => SaslAuthenticateRequest::default()
            .with_auth_bytes(Bytes::from_static(b"n,,n=user,r=abc"))
            .encode(&mut buf, version),
        ApiKey::DescribeUserScramCredentials => {
            use describe_user_scram_credentials_request::*;
            DescribeUserScramCredentialsRequest::default()
                .with_users(Some(two(UserName::default().with_name(name("u")))))
                .encode(&mut buf, version)
        }
        ApiKey::AlterUserScramCredentials => {
            use alter_user_scram_credentials_request::*;
            let deletion = ScramCredentialDeletion::default()
                .with_name(name("u"))
                .with_mechanism(1);
            let upsertion = ScramCredentialUpsertion::default()
                .with_name(name("u"))
                .with_mechanism(2)
                .with_iterations(4096)
                .with_salt(Bytes::from_static(b"salt"))
                .with_salted_password(Bytes::from_static(b"salted"));
            AlterUserScramCredentialsRequest::default()
                .with_deletions(two(deletion))
                .with_upsertions(two(upsertion))
                .encode(&mut buf, version)
        }
        ApiKey::DescribeAcls => DescribeAclsRequest::default()
            .with_resource_type_filter(2)
            .with_resource_name_filter(Some(name("t")))
            .with_pattern_type_filter(3)
            .with_principal_filter(None)
            .with_host_filter(Some(name("*")))
            .with_operation(1)
            .with_permission_type(1)
            .encode(&mut buf, version),
        ApiKey::CreateAcls => {
            let creation = create_acls_request::AclCreation::default()
                .with_resource_type(2)
                .with_resource_name(name("t"))
                .with_resource_pattern_type(3)
                .with_principal(name("User:u"))
                .with_host(name("*"))
                .with_operation(3)
                .with_permission_type(3);
            CreateAclsRequest::default()
                .with_creations(two(creation))
                .encode(&mut buf, version)
        }
        ApiKey::DeleteAcls => {
            let filter = delete_acls_request::DeleteAclsFilter::default()
                .with_resource_type_filter(1)
                .with_resource_name_filter(None)
                .with_pattern_type_filter(1)
                .with_principal_filter(Some(name("User:u")))
                .with_host_filter(None)
                .with_operation(1)
                .with_permission_type(1);
            DeleteAclsRequest::default()
                .with_filters(two(filter))
                .encode(&mut buf, version)
        }
        ApiKey::AddPartitionsToTxn => {
            use add_partitions_to_txn_request::*;
            let t = AddPartitionsToTxnTopic::default()
                .with_name(topic.clone())
                .with_partitions(vec![1, 2]);
            let mut r = AddPartitionsToTxnRequest::default();
            if version >= 4 {
                r.transactions = two(AddPartitionsToTxnTransaction::default()
                    .with_transactional_id(TransactionalId(name("tx")))
                    .with_producer_id(ProducerId(7))
                    .with_verify_only(true)
                    .with_topics(two(t)));
            } else {
                r.v3_and_below_transactional_id = TransactionalId(name("tx"));
                r.v3_and_below_producer_id = ProducerId(7);
                r.v3_and_below_topics = two(t);
            }
            r.encode(&mut buf, version)
        }
        ApiKey::AddOffsetsToTxn => AddOffsetsToTxnRequest::default()
            .with_transactional_id(TransactionalId(name("tx")))
            .with_group_id(GroupId(name("g")))
            .encode(&mut buf, version),
        ApiKey::EndTxn => EndTxnRequest::default()
            .with_transactional_id(TransactionalId(name("tx")))
            .with_committed(true)
            .encode(&mut buf, version),
        ApiKey::TxnOffsetCommit => {
            use txn_offset_commit_request::*;
            let p = TxnOffsetCommitRequestPartition::default()
                .with_committed_offset(5)
                .with_committed_metadata(Some(name("m")));
            let t = TxnOffsetCommitRequestTopic::default()
                .with_name(topic.clone())
                .with_partitions(two(p));
            let mut r = TxnOffsetCommitRequest::default()
                .with_transactional_id(TransactionalId(name("tx")))
                .with_group_id(GroupId(name("g")))
                .with_topics(two(t));
            if version >= 3 {
                r.member_id = name("m");
                r.group_instance_id = Some(name("i"));
            }
            r.encode(&mut buf, version)
        }
        ApiKey::DescribeTransactions => DescribeTransactionsRequest::default()
            .with_transactional_ids(two(TransactionalId(name("tx"))))
            .encode(&mut buf, version),
        ApiKey::ListTransactions => ListTransactionsRequest::default()
            .with_state_filters(two(name("Ongoing")))
            .with_producer_id_filters(two(ProducerId(7)))
            .encode(&mut buf, version),
        ApiKey::ConsumerGroupHeartbeat => {
            let owned = consumer_group_heartbeat_request::TopicPartitions::default()
                .with_topic_id(uuid::Uuid::from_u128(9))
                .with_partitions(two(1));
            ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(name("g")))
                .with_member_id(name("m"))
                .with_member_epoch(3)
                .with_instance_id(Some(name("i")))
                .with_rack_id(Some(name("r")))
                .with_rebalance_timeout_ms(5)
                .with_subscribed_topic_names(Some(two(topic.clone())))
                .with_subscribed_topic_regex((version >= 1).then(|| name("t.*")))
                .with_server_assignor(Some(name("uniform")))
                .with_topic_partitions(Some(two(owned)))
                .encode(&mut buf, version)
        }
        ApiKey::ConsumerGroupDescribe => ConsumerGroupDescribeRequest::default()
            .with_group_ids(two(GroupId(name("g"))))
            .with_include_authorized_operations(true)
            .encode(&mut buf, version),
        ApiKey::ShareGroupHeartbeat => ShareGroupHeartbeatRequest::default()
            .with_group_id(GroupId(name("g")))
            .with_member_id(name("m"))
            .with_member_epoch(3)
            .with_rack_id(Some(name("r")))
            .with_subscribed_topic_names(Some(two(topic.clone())))
            .encode(&mut buf, version),
        ApiKey::ShareGroupDescribe => ShareGroupDescribeRequest::default()
            .with_group_ids(two(GroupId(name("g"))))
            .with_include_authorized_operations(true)
            .encode(&mut buf, version),
        ApiKey::ShareFetch => {
            use share_fetch_request::*;
            let batch = AcknowledgementBatch::default()
                .with_first_offset(1)
                .with_last_offset(2)
                .with_acknowledge_types(vec![1, 2]);
            let p = FetchPartition::default()
                .with_partition_index(1)
                .with_acknowledgement_batches(two(batch));
            let t = FetchTopic::default()
                .with_topic_id(uuid::Uuid::from_u128(9))
                .with_partitions(two(p));
            let f = ForgottenTopic::default()
                .with_topic_id(uuid::Uuid::from_u128(8))
                .with_partitions(two(3));
            ShareFetchRequest::default()
                .with_group_id(Some(GroupId(name("g"))))
                .with_member_id(Some(name("m")))
                .with_share_session_epoch(2)
                .with_max_wait_ms(5)
                .with_max_records(7)
                .with_batch_size(7)
                .with_topics(two(t))
                .with_forgotten_topics_data(two(f))
                .encode(&mut buf, version)
        }
        ApiKey::ShareAcknowledge => {
            use share_acknowledge_request::*;
            let batch = AcknowledgementBatch::default()
                .with_first_offset(1)
                .with_last_offset(1)
                .with_acknowledge_types(vec![3]);
            let p = AcknowledgePartition::default()
                .with_partition_index(1)
                .with_acknowledgement_batches(two(batch));
            let t = AcknowledgeTopic::default()
                .with_topic_id(uuid::Uuid::from_u128(9))
                .with_partitions(two(p));
            ShareAcknowledgeRequest::default()
                .with_group_id(Some(GroupId(name("g"))))
                .with_member_id(Some(name("m")))
                .with_share_session_epoch(2)
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::DescribeShareGroupOffsets => {
            use describe_share_group_offsets_request::*;
            let t = DescribeShareGroupOffsetsRequestTopic::default()
                .with_topic_name(topic.clone())
                .with_partitions(two(1));
            let g = DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(GroupId(name("g")))
                .with_topics(Some(two(t)));
            // One group naming topics, one asking for all (null).
            let all = DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(GroupId(name("h")))
                .with_topics(None);
            DescribeShareGroupOffsetsRequest::default()
                .with_groups(vec![g, all])
                .encode(&mut buf, version)
        }
        ApiKey::AlterShareGroupOffsets => {
            use alter_share_group_offsets_request::*;
            let p = AlterShareGroupOffsetsRequestPartition::default()
                .with_partition_index(1)
                .with_start_offset(42);
            let t = AlterShareGroupOffsetsRequestTopic::default()
                .with_topic_name(topic.clone())
                .with_partitions(two(p));
            AlterShareGroupOffsetsRequest::default()
                .with_group_id(GroupId(name("g")))
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        ApiKey::DeleteShareGroupOffsets => {
            use delete_share_group_offsets_request::*;
            let t = DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(topic.clone());
            DeleteShareGroupOffsetsRequest::default()
                .with_group_id(GroupId(name("g")))
                .with_topics(two(t))
                .encode(&mut buf, version)
        }
        other => panic!("no sample for {other:?}"),
    };
    result.unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
    buf
}

#[test]
fn every_schema_matches_the_codec_at_every_version() {
    for &(api, min, max) in SUPPORTED {
        for version in min..=max {
            let body = sample(api, version);
            let covered =
                check(api, version, &body).unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
            assert_eq!(
                covered,
                body.len(),
                "{api:?} v{version}: the schema must cover the whole body"
            );
        }
    }
}

#[test]
fn impossible_counts_are_refused() {
    // Metadata v0 claiming 2^31 - 1 topics in four bytes.
    assert!(check(ApiKey::Metadata, 0, &[0x7f, 0xff, 0xff, 0xff]).is_err());
    // A produce whose one topic claims 1e9 partitions.
    let mut body = vec![0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, b't'];
    body.extend_from_slice(&1_000_000_000i32.to_be_bytes());
    assert!(check(ApiKey::Produce, 3, &body).is_err());
    // Flexible: a compact array of 2^28 elements.
    assert!(check(ApiKey::Metadata, 12, &[0x80, 0x80, 0x80, 0x80, 0x01]).is_err());
}
