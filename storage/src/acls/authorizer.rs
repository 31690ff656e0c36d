//! Kafka's authorization decision, for both doors, over the ACLs cached
//! in memory: a request never waits on the database, except to read the
//! change counter when the cache is older than the refresh interval (a
//! second by default), and the ACLs themselves only when it moved. This
//! broker's own changes go through here and are seen at once; another
//! broker's within one interval.
//!
//! The decision, as Kafka's `StandardAuthorizer` makes it: off, or a super
//! user, allows everything; otherwise a DENY binding for the operation (or
//! ALL) that matches the principal, host and resource refuses; then an
//! ALLOW binding for the operation, ALL, or an operation that implies it
//! (READ, WRITE, DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS implies
//! DESCRIBE_CONFIGS) allows; nothing else does, unless the broker allows
//! everyone where no ACL is found (Kafka's `allow.everyone.if.no.acl.found`)
//! and no binding, of any principal or operation, names the resource.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{
    AclBinding, AclError, AclFilter, AclOperation, AclPermission, PatternType, ResourceType,
    WILDCARD,
};
use crate::Engine;

/// The principal that stands for every user.
const WILDCARD_USER: &str = "User:*";

/// How authorization is configured.
#[derive(Debug, Clone)]
pub struct AuthorizerConfig {
    /// Whether ACLs are enforced; off, everything is allowed (as today).
    pub enabled: bool,
    /// Principals allowed everything (`User:admin`).
    pub super_users: Vec<String>,
    /// Allows everything on a resource no binding names (Kafka's
    /// `allow.everyone.if.no.acl.found`; off by default, as in Kafka).
    pub allow_if_no_acl: bool,
    /// How old the cached ACLs may be before the change counter is read.
    pub refresh: Duration,
}

impl Default for AuthorizerConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            super_users: Vec::new(),
            allow_if_no_acl: false,
            refresh: Duration::from_secs(1),
        }
    }
}

/// The ACLs as last read, and when the counter was checked.
#[derive(Debug)]
struct Cached {
    bindings: Arc<Vec<AclBinding>>,
    version: Option<i64>,
    checked: Option<Instant>,
}

/// Decides, for one broker, what principals may do; cheap to share.
#[derive(Debug)]
pub struct Authorizer {
    engine: Engine,
    enabled: bool,
    super_users: HashSet<String>,
    allow_if_no_acl: bool,
    refresh: Duration,
    cached: Mutex<Cached>,
    /// Held by the one request that reads the database when the cache is
    /// stale; the others wait for its answer instead of asking too.
    reloading: tokio::sync::Mutex<()>,
}

impl Authorizer {
    /// An authorizer over `engine`'s ACLs.
    pub fn new(engine: Engine, config: AuthorizerConfig) -> Self {
        Self {
            engine,
            enabled: config.enabled,
            super_users: config.super_users.into_iter().collect(),
            allow_if_no_acl: config.allow_if_no_acl,
            refresh: config.refresh,
            cached: Mutex::new(Cached {
                bindings: Arc::new(Vec::new()),
                version: None,
                checked: None,
            }),
            reloading: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether ACLs are enforced.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// What `principal` connected from `host` may do, by the ACLs as of
    /// now (at most one refresh interval old for other brokers' changes).
    pub async fn access(&self, principal: &str, host: &str) -> Access {
        if !self.enabled || self.super_users.contains(principal) {
            return Access::everything();
        }
        Access {
            bindings: Some(self.bindings().await),
            principal: principal.to_owned(),
            host: host.trim_start_matches('/').to_owned(),
            allow_if_no_acl: self.allow_if_no_acl,
        }
    }

    /// Stores `bindings` and makes this broker see them at once.
    pub async fn create(&self, bindings: &[AclBinding]) -> Result<(), AclError> {
        let done = self.engine.create_acls(bindings).await;
        self.invalidate();
        done
    }

    /// Deletes what `filters` match (per filter, what went) and makes this
    /// broker see it at once.
    pub async fn delete(&self, filters: &[AclFilter]) -> Result<Vec<Vec<AclBinding>>, AclError> {
        let done = self.engine.delete_acls(filters).await;
        self.invalidate();
        done
    }

    /// The bindings `filter` matches, from the database.
    pub async fn describe(&self, filter: &AclFilter) -> Result<Vec<AclBinding>, AclError> {
        self.engine.acls(filter).await
    }

    fn invalidate(&self) {
        self.cached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .checked = None;
    }

    fn fresh(&self) -> Option<Arc<Vec<AclBinding>>> {
        let cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        cached
            .checked
            .filter(|at| at.elapsed() < self.refresh)
            .map(|_| cached.bindings.clone())
    }

    async fn bindings(&self) -> Arc<Vec<AclBinding>> {
        if let Some(bindings) = self.fresh() {
            return bindings;
        }
        let _reloading = self.reloading.lock().await;
        // Another request may have refreshed while this one waited.
        if let Some(bindings) = self.fresh() {
            return bindings;
        }
        let known = self
            .cached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .version;
        let read = async {
            let version = self.engine.acl_version().await?;
            if Some(version) == known {
                return Ok::<_, AclError>((version, None));
            }
            let all = self.engine.acls(&AclFilter::any()).await?;
            Ok((version, Some(all)))
        };
        let mut cached = match read.await {
            Ok((version, all)) => {
                let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(all) = all {
                    cached.bindings = Arc::new(all);
                }
                cached.version = Some(version);
                cached
            }
            Err(e) => {
                // Keep deciding by the last ACLs read (none at first: all
                // is denied) and try again after an interval.
                tracing::warn!(error = %e, "authorizer: cannot read the ACLs; using the last ones read");
                self.cached.lock().unwrap_or_else(PoisonError::into_inner)
            }
        };
        cached.checked = Some(Instant::now());
        cached.bindings.clone()
    }
}

/// One principal's view of the ACLs: answers without waiting.
#[derive(Debug, Clone)]
pub struct Access {
    /// `None`: everything is allowed (authorization off, or a super user).
    bindings: Option<Arc<Vec<AclBinding>>>,
    principal: String,
    host: String,
    /// Everything is allowed on a resource no binding names.
    allow_if_no_acl: bool,
}

impl Access {
    /// Allows everything: what a broker without authorization answers.
    pub fn everything() -> Self {
        Self {
            bindings: None,
            principal: String::new(),
            host: String::new(),
            allow_if_no_acl: false,
        }
    }

    /// Whether everything is allowed without looking at ACLs.
    pub fn unrestricted(&self) -> bool {
        self.bindings.is_none()
    }

    /// Whether `operation` on the resource `name` of `resource_type` is allowed.
    pub fn allows(&self, operation: AclOperation, resource_type: ResourceType, name: &str) -> bool {
        let Some(bindings) = &self.bindings else {
            return true;
        };
        if self.allow_if_no_acl
            && !bindings
                .iter()
                .any(|b| b.resource_type == resource_type && name_matches(b, name))
        {
            return true;
        }
        let applicable = |b: &&AclBinding| {
            b.resource_type == resource_type && self.applies_to_me(b) && name_matches(b, name)
        };
        let denied = bindings.iter().filter(applicable).any(|b| {
            b.permission == AclPermission::Deny
                && (b.operation == operation || b.operation == AclOperation::All)
        });
        !denied
            && bindings
                .iter()
                .filter(applicable)
                .any(|b| b.permission == AclPermission::Allow && implies(b.operation, operation))
    }

    /// Whether `operation` on topic `name` is allowed.
    pub fn topic(&self, operation: AclOperation, name: &str) -> bool {
        self.allows(operation, ResourceType::Topic, name)
    }

    /// Whether `operation` on consumer group `name` is allowed.
    pub fn group(&self, operation: AclOperation, name: &str) -> bool {
        self.allows(operation, ResourceType::Group, name)
    }

    /// Whether `operation` on the cluster is allowed.
    pub fn cluster(&self, operation: AclOperation) -> bool {
        self.allows(operation, ResourceType::Cluster, super::CLUSTER_NAME)
    }

    /// Whether `operation` is allowed on some resource of `resource_type`
    /// (Kafka 3's check for idempotent producers: WRITE on any topic): an
    /// allowing binding whose resources a deny does not cover entirely.
    pub fn allows_any(&self, operation: AclOperation, resource_type: ResourceType) -> bool {
        let Some(bindings) = &self.bindings else {
            return true;
        };
        // Some resource of the type that no binding names is allowed.
        if self.allow_if_no_acl
            && !bindings
                .iter()
                .any(|b| b.resource_type == resource_type && names_all(b))
        {
            return true;
        }
        let mine = |b: &&AclBinding| b.resource_type == resource_type && self.applies_to_me(b);
        let denies: Vec<&AclBinding> = bindings
            .iter()
            .filter(mine)
            .filter(|b| {
                b.permission == AclPermission::Deny
                    && (b.operation == operation || b.operation == AclOperation::All)
            })
            .collect();
        bindings
            .iter()
            .filter(mine)
            .filter(|b| b.permission == AclPermission::Allow && implies(b.operation, operation))
            .any(|allow| !denies.iter().any(|deny| covers(deny, allow)))
    }

    /// KIP-430's bit field: which of `operations` are allowed on the resource.
    pub fn operations_bits(
        &self,
        resource_type: ResourceType,
        name: &str,
        operations: &[AclOperation],
    ) -> i32 {
        operations
            .iter()
            .filter(|op| self.allows(**op, resource_type, name))
            .fold(0, |bits, op| bits | 1 << op.code())
    }

    fn applies_to_me(&self, b: &AclBinding) -> bool {
        // `User:*` is every user (the only wildcard principal Kafka has).
        let principal = b.principal == self.principal
            || (b.principal == WILDCARD_USER && self.principal.starts_with("User:"));
        principal && (b.host == WILDCARD || b.host == self.host)
    }
}

/// Whether `binding`'s pattern matches the resource `name`.
fn name_matches(binding: &AclBinding, name: &str) -> bool {
    match binding.pattern {
        PatternType::Literal => binding.resource_name == WILDCARD || binding.resource_name == name,
        PatternType::Prefixed => name.starts_with(&binding.resource_name),
    }
}

/// Whether `binding`'s pattern matches every name.
fn names_all(binding: &AclBinding) -> bool {
    match binding.pattern {
        PatternType::Literal => binding.resource_name == WILDCARD,
        PatternType::Prefixed => binding.resource_name.is_empty(),
    }
}

/// Whether `deny` covers every resource `allow` names.
fn covers(deny: &AclBinding, allow: &AclBinding) -> bool {
    match (deny.pattern, allow.pattern) {
        (PatternType::Literal, _) if deny.resource_name == WILDCARD => true,
        (PatternType::Literal, PatternType::Literal) => deny.resource_name == allow.resource_name,
        (PatternType::Prefixed, _) => allow.resource_name.starts_with(&deny.resource_name),
        (PatternType::Literal, PatternType::Prefixed) => false,
    }
}

/// Whether allowing `granted` allows `wanted`.
fn implies(granted: AclOperation, wanted: AclOperation) -> bool {
    use AclOperation::*;
    granted == wanted
        || granted == All
        || match wanted {
            Describe => matches!(granted, Read | Write | Delete | Alter),
            DescribeConfigs => granted == AlterConfigs,
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(
        resource_type: ResourceType,
        name: &str,
        pattern: PatternType,
        principal: &str,
        operation: AclOperation,
        permission: AclPermission,
    ) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: name.into(),
            pattern,
            principal: principal.into(),
            host: WILDCARD.into(),
            operation,
            permission,
        }
    }

    fn access(principal: &str, bindings: Vec<AclBinding>) -> Access {
        Access {
            bindings: Some(Arc::new(bindings)),
            principal: principal.into(),
            host: "127.0.0.1".into(),
            allow_if_no_acl: false,
        }
    }

    use AclOperation::*;
    use AclPermission::*;
    use PatternType::*;
    use ResourceType::*;

    #[test]
    fn nothing_is_allowed_without_a_binding() {
        let a = access("User:alice", vec![]);
        assert!(!a.allows(Read, Topic, "t"));
        assert!(!a.allows_any(Write, Topic));
        assert!(Access::everything().allows(Read, Topic, "t"));
    }

    #[test]
    fn implied_operations_wildcards_and_prefixes() {
        let a = access(
            "User:alice",
            vec![
                binding(Topic, "orders", Literal, "User:alice", Write, Allow),
                binding(Topic, "logs-", Prefixed, "User:*", Read, Allow),
                binding(Topic, "*", Literal, "User:alice", AlterConfigs, Allow),
            ],
        );
        assert!(a.allows(Write, Topic, "orders"));
        assert!(
            a.allows(Describe, Topic, "orders"),
            "WRITE implies DESCRIBE"
        );
        assert!(!a.allows(Read, Topic, "orders"));
        assert!(
            a.allows(Read, Topic, "logs-app"),
            "prefix, wildcard principal"
        );
        assert!(!a.allows(Read, Topic, "log"));
        assert!(a.allows(DescribeConfigs, Topic, "anything"), "literal *");
        assert!(!a.allows(Read, Group, "orders"), "another resource type");
        assert_eq!(
            a.operations_bits(Topic, "orders", &[Read, Write, Describe]),
            1 << 4 | 1 << 8
        );
    }

    #[test]
    fn deny_wins_and_all_denies_everything() {
        let a = access(
            "User:bob",
            vec![
                binding(Topic, "*", Literal, "User:bob", All, Allow),
                binding(Topic, "secret-", Prefixed, "User:bob", Read, Deny),
                binding(Topic, "vault", Literal, "User:*", All, Deny),
            ],
        );
        assert!(a.allows(Read, Topic, "public"));
        assert!(!a.allows(Read, Topic, "secret-x"));
        assert!(a.allows(Write, Topic, "secret-x"), "only READ is denied");
        assert!(!a.allows(Describe, Topic, "vault"));
        assert!(a.allows_any(Write, Topic));
        let b = access(
            "User:bob",
            vec![
                binding(Topic, "x", Literal, "User:bob", Write, Allow),
                binding(Topic, "*", Literal, "User:bob", Write, Deny),
            ],
        );
        assert!(!b.allows_any(Write, Topic), "the wildcard deny covers it");
    }

    #[test]
    fn other_principals_and_hosts_do_not_match() {
        let mut remote = binding(Topic, "t", Literal, "User:carol", Read, Allow);
        remote.host = "10.0.0.9".into();
        let a = access(
            "User:carol",
            vec![
                remote,
                binding(Topic, "u", Literal, "User:dave", Read, Allow),
            ],
        );
        assert!(!a.allows(Read, Topic, "t"), "another host");
        assert!(!a.allows(Read, Topic, "u"), "another principal");
    }
}
