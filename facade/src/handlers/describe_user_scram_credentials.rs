//! DescribeUserScramCredentials: which SCRAM mechanisms each user has a
//! credential for, with iterations (never salts or keys).

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{Access, AclOperation};

use crate::broker::Broker;

/// Answers every user (no list, or an empty one) or the named ones;
/// a named user without credentials is `RESOURCE_NOT_FOUND`, a name asked
/// twice `DUPLICATE_RESOURCE`, as Kafka answers.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: DescribeUserScramCredentialsRequest,
    access: &Access,
) -> DescribeUserScramCredentialsResponse {
    if !access.cluster(AclOperation::Describe) {
        return DescribeUserScramCredentialsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(StrBytes::from_static_str(
                "DESCRIBE on the cluster is not allowed",
            )));
    }
    let names: Option<Vec<String>> = request
        .users
        .filter(|u| !u.is_empty())
        .map(|u| u.into_iter().map(|n| n.name.to_string()).collect());
    let users = match broker.engine.users(names.as_deref()).await {
        Ok(users) => users,
        Err(e) => {
            tracing::warn!(error = %e, "kafka: cannot list SCRAM users");
            return DescribeUserScramCredentialsResponse::default()
                .with_error_code(ResponseError::UnknownServerError.code())
                .with_error_message(Some(StrBytes::from_static_str("the user store failed")));
        }
    };
    let found = |name: &str| users.iter().find(|u| u.name == name);
    let described = |user: &storage::UserInfo| {
        DescribeUserScramCredentialsResult::default()
            .with_user(StrBytes::from_string(user.name.clone()))
            .with_credential_infos(
                user.mechanisms
                    .iter()
                    .map(|(m, iterations)| {
                        CredentialInfo::default()
                            .with_mechanism(m.kafka_type())
                            .with_iterations(*iterations)
                    })
                    .collect(),
            )
    };
    let results = match names {
        None => users.iter().map(described).collect(),
        Some(names) => names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let error = |e: ResponseError, message: String| {
                    DescribeUserScramCredentialsResult::default()
                        .with_user(StrBytes::from_string(name.clone()))
                        .with_error_code(e.code())
                        .with_error_message(Some(StrBytes::from_string(message)))
                };
                if names[..i].contains(name) || names[i + 1..].contains(name) {
                    error(
                        ResponseError::DuplicateResource,
                        format!("user {name:?} is asked for more than once"),
                    )
                } else {
                    match found(name) {
                        Some(user) => described(user),
                        None => error(
                            ResponseError::ResourceNotFound,
                            format!(
                                "attempt to describe a user credential that does not exist: {name}"
                            ),
                        ),
                    }
                }
            })
            .collect(),
    };
    DescribeUserScramCredentialsResponse::default().with_results(results)
}
