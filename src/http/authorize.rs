//! Authorization of HTTP requests by the Kafka ACLs, through the broker's
//! one [`Authorizer`] (the Kafka door's): same bindings, same decision.
//!
//! The principal is the authenticated caller, `User:<sub or user name>`,
//! or `User:ANONYMOUS` without `--http-auth` (as a Kafka PLAINTEXT
//! listener's); the host is the peer's IP address. A queue is a topic and
//! a consumer group a group; what each route needs is listed in the
//! README (HTTP ACLs). Handlers take [`Allowed`] and call [`require`]
//! before they change or read anything, so a refused request does nothing.
//! With `--authorizer none` [`Allowed`] is [`Access::everything`], built
//! without allocating or waiting, and every check answers at once.

use std::net::{IpAddr, SocketAddr};

use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use storage::{Access, AclOperation, KvOp, KvRequest, PartitionId, ResourceType, QUEUE_MODE_GROUP};

use super::auth::Caller;
use super::error::ApiError;
use super::tls::TlsListener;
use super::AppState;
use crate::metrics::http::CountedListener;

/// The principal of requests when the HTTP API authenticates nobody.
pub const ANONYMOUS: &str = "User:ANONYMOUS";

/// What `caller`, connected from `host`, may do by the ACLs as of now.
pub async fn access(state: &AppState, caller: Option<&Caller>, host: Option<IpAddr>) -> Access {
    if !state.authorizer.enabled() {
        return Access::everything();
    }
    let principal = caller.map_or(ANONYMOUS, |c| c.principal.as_str());
    // An IPv4 client of a dual-stack listener is the IPv4 address ACLs name.
    let host = host
        .map(|ip| ip.to_canonical().to_string())
        .unwrap_or_default();
    state.authorizer.access(principal, &host).await
}

/// `Ok` if `access` allows `operation` on the resource, else
/// [`ApiError::Forbidden`] naming both.
pub fn require(
    access: &Access,
    operation: AclOperation,
    resource_type: ResourceType,
    name: &str,
) -> Result<(), ApiError> {
    if access.allows(operation, resource_type, name) {
        Ok(())
    } else {
        Err(ApiError::Forbidden {
            operation,
            resource_type,
            name: name.to_owned(),
        })
    }
}

/// [`require`] on the queue `name` (a topic).
pub fn require_queue(access: &Access, operation: AclOperation, name: &str) -> Result<(), ApiError> {
    require(access, operation, ResourceType::Topic, name)
}

/// [`require`] on the consumer group a consumer names. Queue mode's
/// built-in group stands for "no group", so consuming in queue mode needs
/// only the queue's ACLs.
pub fn require_consumer_group(
    access: &Access,
    operation: AclOperation,
    group: &str,
) -> Result<(), ApiError> {
    if group == QUEUE_MODE_GROUP {
        return Ok(());
    }
    require(access, operation, ResourceType::Group, group)
}

/// [`require`] on the cluster.
pub fn require_cluster(access: &Access, operation: AclOperation) -> Result<(), ApiError> {
    require(
        access,
        operation,
        ResourceType::Cluster,
        storage::CLUSTER_NAME,
    )
}

/// Whether a listing may show `group`: as Kafka's ListGroups, DESCRIBE on
/// the cluster shows every group, else DESCRIBE on the group is needed.
pub fn may_list_group(access: &Access, group: &str) -> bool {
    access.unrestricted()
        || access.cluster(AclOperation::Describe)
        || access.group(AclOperation::Describe, group)
}

/// The peer address of a connection, for `into_make_service_with_connect_info`
/// over the broker's own listeners (counted, TLS), which axum's
/// `SocketAddr` does not cover.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

impl Connected<IncomingStream<'_, CountedListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, CountedListener>) -> Self {
        Self(*stream.remote_addr())
    }
}

impl Connected<IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, TlsListener>) -> Self {
        Self(*stream.remote_addr())
    }
}

/// The request's [`Access`], as an extractor.
#[derive(Debug, Clone)]
pub struct Allowed(pub Access);

impl FromRequestParts<AppState> for Allowed {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if !state.authorizer.enabled() {
            return Ok(Self(Access::everything()));
        }
        let caller = parts.extensions.get::<Caller>();
        let peer = parts
            .extensions
            .get::<ConnectInfo<Peer>>()
            .map(|ConnectInfo(Peer(addr))| addr.ip());
        Ok(Self(access(state, caller, peer).await))
    }
}

/// Paths of routes guarded by [`describe_cluster`] that stay open to any
/// authenticated caller: the dashboard's page and its static files, the
/// same for everyone and holding no data.
fn is_static_asset(path: &str) -> bool {
    path == "/" || path.starts_with("/dashboard/")
}

/// Serves the request only if its caller may DESCRIBE the cluster (the
/// dashboard's data routes and `/metrics`: they name every queue, group
/// and broker); a middleware for routers outside the native API.
pub async fn describe_cluster(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if state.authorizer.enabled() && !is_static_asset(request.uri().path()) {
        let (mut parts, body) = request.into_parts();
        let Ok(Allowed(access)) = Allowed::from_request_parts(&mut parts, &state).await;
        if let Err(refused) = require_cluster(&access, AclOperation::Describe) {
            return refused.into_response();
        }
        return next.run(Request::from_parts(parts, body)).await;
    }
    next.run(request).await
}

/// Checks pushes to `queues` (a push's, or a transaction's): WRITE on
/// each, and CREATE (on the cluster or the queue) for one that does not
/// exist yet, as Kafka's auto-creation of a topic needs. Only a caller
/// who may write but not create pays the lookup of the queues.
pub async fn require_push<Q: AsRef<str> + Sync>(
    state: &AppState,
    access: &Access,
    queues: &[Q],
) -> Result<(), ApiError> {
    if access.unrestricted() {
        return Ok(());
    }
    let mut seen = std::collections::BTreeSet::new();
    for queue in queues {
        let queue = queue.as_ref();
        if !seen.insert(queue) {
            continue;
        }
        require_queue(access, AclOperation::Write, queue)?;
        if access.cluster(AclOperation::Create) || access.topic(AclOperation::Create, queue) {
            continue;
        }
        if state.engine.queue(queue).await?.is_none() {
            require_queue(access, AclOperation::Create, queue)?;
        }
    }
    Ok(())
}

/// Checks acknowledgements, each for its group of a message of its partition: READ
/// on the group (none in queue mode) and on each partition's queue. An
/// unknown partition is left to the ack, which refuses it. Only a
/// restricted caller pays the lookup of the queues.
pub async fn require_ack(
    state: &AppState,
    access: &Access,
    acks: &[(&str, PartitionId)],
) -> Result<(), ApiError> {
    if access.unrestricted() {
        return Ok(());
    }
    let mut seen = std::collections::BTreeSet::new();
    for &(group, partition) in acks {
        require_consumer_group(access, AclOperation::Read, group)?;
        if !seen.insert(partition) {
            continue;
        }
        if let Some(queue) = state.engine.partition_queue(partition).await? {
            require_queue(access, AclOperation::Read, &queue)?;
        }
    }
    Ok(())
}

/// Checks KV ops, which Kafka has no resource for: they are the
/// cluster's. Reads (`get`, `getMany`, `getPrefix`, `check`) need READ on
/// the cluster, writes WRITE on it; Kafka's own cluster operations use
/// neither, so these grants give nothing on the Kafka door (beyond
/// DESCRIBE, which both imply).
pub fn require_kv(access: &Access, ops: &[KvRequest]) -> Result<(), ApiError> {
    let writes = |r: &KvRequest| {
        !matches!(
            r.op,
            KvOp::Get { .. } | KvOp::GetMany { .. } | KvOp::GetPrefix { .. } | KvOp::Check { .. }
        )
    };
    if ops.iter().any(writes) {
        require_cluster(access, AclOperation::Write)?;
    }
    if ops.iter().any(|r| !writes(r)) {
        require_cluster(access, AclOperation::Read)?;
    }
    Ok(())
}
