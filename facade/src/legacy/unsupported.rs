//! Requests of a version this broker does not serve (an API it does not
//! implement), answered `UNSUPPORTED_VERSION` where the client can read the
//! answer: the API's response at the version asked for, known to the
//! protocol crate, with a top-level error code in that version. Kafka
//! closes the connection for these (only ApiVersions is answered there,
//! as v0); an answer lets the client report the error and carry on.
//! Where no readable form exists (a version newer than any schema here,
//! or a response whose errors all sit inside lists it would have to
//! echo), the connection is closed, as Kafka does.

use bytes::BytesMut;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::conn::ConnError;
use crate::handlers::respond;

macro_rules! with_top_level_error {
    ($($key:ident => $response:ident),* $(,)?) => {
        /// The frame answering `version` of `api` with `UNSUPPORTED_VERSION`
        /// (`error` none: the same answer without it, to compare).
        fn frame(api: ApiKey, version: i16, correlation_id: i32, error: i16) -> Result<BytesMut, ConnError> {
            match api {
                $(ApiKey::$key => respond(
                    api,
                    version,
                    correlation_id,
                    &$response::default().with_error_code(error),
                ),)*
                _ => Err(ConnError::UnsupportedVersion { api: format!("{api:?}"), version }),
            }
        }
    };
}

with_top_level_error!(
    AddOffsetsToTxn => AddOffsetsToTxnResponse,
    AddPartitionsToTxn => AddPartitionsToTxnResponse,
    AddRaftVoter => AddRaftVoterResponse,
    AllocateProducerIds => AllocateProducerIdsResponse,
    AlterPartitionReassignments => AlterPartitionReassignmentsResponse,
    AlterPartition => AlterPartitionResponse,
    AssignReplicasToDirs => AssignReplicasToDirsResponse,
    BeginQuorumEpoch => BeginQuorumEpochResponse,
    BrokerHeartbeat => BrokerHeartbeatResponse,
    BrokerRegistration => BrokerRegistrationResponse,
    ConsumerGroupHeartbeat => ConsumerGroupHeartbeatResponse,
    ControllerRegistration => ControllerRegistrationResponse,
    CreateDelegationToken => CreateDelegationTokenResponse,
    DescribeAcls => DescribeAclsResponse,
    DescribeClientQuotas => DescribeClientQuotasResponse,
    DescribeCluster => DescribeClusterResponse,
    DescribeDelegationToken => DescribeDelegationTokenResponse,
    DescribeLogDirs => DescribeLogDirsResponse,
    DescribeQuorum => DescribeQuorumResponse,
    DescribeUserScramCredentials => DescribeUserScramCredentialsResponse,
    ElectLeaders => ElectLeadersResponse,
    EndQuorumEpoch => EndQuorumEpochResponse,
    EndTxn => EndTxnResponse,
    Envelope => EnvelopeResponse,
    ExpireDelegationToken => ExpireDelegationTokenResponse,
    Fetch => FetchResponse,
    FetchSnapshot => FetchSnapshotResponse,
    FindCoordinator => FindCoordinatorResponse,
    GetTelemetrySubscriptions => GetTelemetrySubscriptionsResponse,
    Heartbeat => HeartbeatResponse,
    InitProducerId => InitProducerIdResponse,
    JoinGroup => JoinGroupResponse,
    LeaveGroup => LeaveGroupResponse,
    ListGroups => ListGroupsResponse,
    ListPartitionReassignments => ListPartitionReassignmentsResponse,
    ListTransactions => ListTransactionsResponse,
    Metadata => MetadataResponse,
    OffsetDelete => OffsetDeleteResponse,
    OffsetFetch => OffsetFetchResponse,
    PushTelemetry => PushTelemetryResponse,
    RemoveRaftVoter => RemoveRaftVoterResponse,
    RenewDelegationToken => RenewDelegationTokenResponse,
    SaslAuthenticate => SaslAuthenticateResponse,
    SaslHandshake => SaslHandshakeResponse,
    ShareAcknowledge => ShareAcknowledgeResponse,
    ShareFetch => ShareFetchResponse,
    ShareGroupHeartbeat => ShareGroupHeartbeatResponse,
    SyncGroup => SyncGroupResponse,
    UnregisterBroker => UnregisterBrokerResponse,
    UpdateFeatures => UpdateFeaturesResponse,
    UpdateRaftVoter => UpdateRaftVoterResponse,
    Vote => VoteResponse,
);

/// The answer to `version` of `api`, which this broker does not serve:
/// `UNSUPPORTED_VERSION` in the response the client expects, or `None`
/// when that response cannot say so (no schema for the version here, or
/// no top-level error code in it).
pub(crate) fn answer(api: ApiKey, version: i16, correlation_id: i32) -> Option<BytesMut> {
    let codec = api.valid_versions();
    if !(codec.min..=codec.max).contains(&version) {
        return None;
    }
    let code = ResponseError::UnsupportedVersion.code();
    let with = frame(api, version, correlation_id, code).ok()?;
    // A version without the field drops the code silently: the same bytes.
    let without = frame(api, version, correlation_id, 0).ok()?;
    (with != without).then_some(with)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;

    #[test]
    fn an_api_with_a_top_level_error_is_answered_at_the_version_asked() {
        let mut frame = answer(ApiKey::EndTxn, 3, 7).expect("answered");
        let _len = frame.get_i32();
        // Response header v1 (flexible): correlation id, no tagged fields.
        assert_eq!(frame.get_i32(), 7);
        assert_eq!(frame.get_u8(), 0);
        let _throttle = frame.get_i32();
        assert_eq!(frame.get_i16(), ResponseError::UnsupportedVersion.code());
    }

    #[test]
    fn no_form_no_answer() {
        // Past every schema here; AddPartitionsToTxn v3 has only per-partition errors.
        assert!(answer(ApiKey::EndTxn, 99, 7).is_none());
        assert!(answer(ApiKey::AddPartitionsToTxn, 3, 7).is_none());
        assert!(answer(ApiKey::WriteTxnMarkers, 1, 7).is_none());
    }
}
