//! AlterUserScramCredentials: delete and upsert SCRAM credentials. Clients
//! send the salted password (never the password); the stored and server
//! keys are derived from it here.

use std::collections::HashMap;
use storage::{Access, AclOperation};

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use storage::{ScramMechanism, UserError};

use crate::auth::credential::from_salted_password;
use crate::broker::Broker;

/// An alteration's result: no error, or a code and a message.
type Outcome = Option<(ResponseError, String)>;

/// Applies each deletion and upsertion, answering one result per user
/// (the first failure of that user's alterations, as Kafka does). A user
/// altered twice for the same mechanism in one request is refused whole.
pub(super) async fn handle(
    broker: &Broker,
    _version: i16,
    request: AlterUserScramCredentialsRequest,
    access: &Access,
) -> AlterUserScramCredentialsResponse {
    let mut seen: HashMap<(String, i8), usize> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let deletions = request
        .deletions
        .iter()
        .map(|d| (d.name.to_string(), d.mechanism));
    let upsertions = request
        .upsertions
        .iter()
        .map(|u| (u.name.to_string(), u.mechanism));
    for key in deletions.chain(upsertions) {
        if !order.contains(&key.0) {
            order.push(key.0.clone());
        }
        *seen.entry(key).or_default() += 1;
    }
    if !access.cluster(AclOperation::Alter) {
        let results = order
            .into_iter()
            .map(|user| {
                AlterUserScramCredentialsResult::default()
                    .with_user(StrBytes::from_string(user))
                    .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
                    .with_error_message(Some(StrBytes::from_static_str(
                        "ALTER on the cluster is not allowed",
                    )))
            })
            .collect();
        return AlterUserScramCredentialsResponse::default().with_results(results);
    }
    let mut outcomes: HashMap<String, Outcome> = HashMap::new();
    let mut fail = |user: &str, outcome: Outcome| {
        let slot = outcomes.entry(user.to_owned()).or_insert(None);
        if slot.is_none() {
            *slot = outcome;
        }
    };
    let duplicated = |user: &str| {
        seen.iter()
            .any(|((name, _), count)| name == user && *count > 1)
    };
    for user in &order {
        if duplicated(user) {
            fail(
                user,
                Some((
                    ResponseError::DuplicateResource,
                    "a user's credential for one mechanism is altered twice".into(),
                )),
            );
        }
    }
    for deletion in &request.deletions {
        let user = deletion.name.as_str();
        if duplicated(user) {
            continue;
        }
        let outcome = match mechanism(deletion.mechanism) {
            Err(e) => Some(e),
            Ok(m) => match broker.engine.delete_scram_credential(user, m).await {
                Ok(true) => None,
                Ok(false) => Some((
                    ResponseError::ResourceNotFound,
                    format!("attempt to delete a user credential that does not exist: {user}"),
                )),
                Err(e) => Some(stored(e)),
            },
        };
        fail(user, outcome);
    }
    for upsertion in &request.upsertions {
        let user = upsertion.name.as_str();
        if duplicated(user) {
            continue;
        }
        let outcome = match mechanism(upsertion.mechanism) {
            Err(e) => Some(e),
            Ok(m) => match from_salted_password(
                m,
                &upsertion.salted_password,
                &upsertion.salt,
                upsertion.iterations,
            ) {
                // Iterations out of range, a salt or salted password of
                // the wrong size: what Kafka calls an unacceptable credential.
                Err(e) => Some((ResponseError::UnacceptableCredential, e.to_string())),
                Ok(credential) => broker
                    .engine
                    .put_scram_credential(user, m, &credential)
                    .await
                    .err()
                    .map(stored),
            },
        };
        fail(user, outcome);
    }
    let results = order
        .into_iter()
        .map(|user| {
            let outcome = outcomes.remove(&user).flatten();
            let mut result =
                AlterUserScramCredentialsResult::default().with_user(StrBytes::from_string(user));
            if let Some((error, message)) = outcome {
                result.error_code = error.code();
                result.error_message = Some(StrBytes::from_string(message));
            }
            result
        })
        .collect();
    AlterUserScramCredentialsResponse::default().with_results(results)
}

fn mechanism(n: i8) -> Result<ScramMechanism, (ResponseError, String)> {
    ScramMechanism::from_kafka_type(n).ok_or_else(|| {
        (
            ResponseError::UnsupportedSaslMechanism,
            format!("unknown SCRAM mechanism {n}"),
        )
    })
}

fn stored(e: UserError) -> (ResponseError, String) {
    match e {
        UserError::InvalidName(_) | UserError::InvalidCredential(_) => {
            (ResponseError::UnacceptableCredential, e.to_string())
        }
        UserError::UnknownStoredMechanism { .. } | UserError::Storage(_) => {
            tracing::warn!(error = %e, "kafka: cannot alter SCRAM credentials");
            (
                ResponseError::UnknownServerError,
                "the user store failed".into(),
            )
        }
    }
}
