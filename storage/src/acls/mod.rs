//! Kafka ACLs: who may do what with which topic, group, transactional id
//! or the cluster. Bindings are kept in the database, shared by every
//! broker; [`Authorizer`] caches them and answers both doors' questions.
//!
//! - this file: the binding model, with Kafka's numeric codes, and its
//!   validation; the engine's create / describe / delete.
//! - [`filter`]: the filters DescribeAcls and DeleteAcls select with.
//! - [`authorizer`]: Kafka's decision (deny wins, implied operations,
//!   wildcards, prefixes, super users) over a cached, refreshed set.
//! - [`resources`]: the queue and groups behind a partition or lease id.

mod authorizer;
mod filter;
mod resources;

pub use authorizer::{Access, Authorizer, AuthorizerConfig};
pub use filter::{AclFilter, PatternFilter};

use crate::Engine;

/// Declares a closed set of Kafka enum values with their wire codes.
macro_rules! kafka_codes {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $code:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),*
        }

        impl $name {
            /// Every value.
            pub const ALL_VALUES: &'static [Self] = &[$(Self::$variant),*];

            /// Kafka's code for the value.
            pub fn code(self) -> i8 {
                match self {
                    $(Self::$variant => $code),*
                }
            }

            /// The value with Kafka code `code`, if it is one of these.
            pub fn from_code(code: i8) -> Option<Self> {
                match code {
                    $($code => Some(Self::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

kafka_codes!(
    /// What kind of thing an ACL is about (Kafka's `ResourceType`).
    ResourceType {
        /// A topic (on the HTTP door: a queue).
        Topic = 2,
        /// A consumer group.
        Group = 3,
        /// The cluster, always named [`CLUSTER_NAME`].
        Cluster = 4,
        /// A producer's `transactional.id`.
        TransactionalId = 5,
    }
);

kafka_codes!(
    /// How a binding's resource name is matched (Kafka's `PatternType`).
    PatternType {
        /// The name exactly, or every resource if it is `*`.
        Literal = 3,
        /// Every resource whose name starts with it.
        Prefixed = 4,
    }
);

kafka_codes!(
    /// What may be done (Kafka's `AclOperation`).
    AclOperation {
        /// Every operation.
        All = 2,
        /// Read (fetch, consume, join a group).
        Read = 3,
        /// Write (produce).
        Write = 4,
        /// Create (topics).
        Create = 5,
        /// Delete (topics, records, groups).
        Delete = 6,
        /// Alter (partitions, ACLs, credentials).
        Alter = 7,
        /// Describe (metadata, offsets, listings).
        Describe = 8,
        /// Inter-broker actions.
        ClusterAction = 9,
        /// Read configs.
        DescribeConfigs = 10,
        /// Change configs.
        AlterConfigs = 11,
        /// Idempotent produce without a transactional id.
        IdempotentWrite = 12,
    }
);

kafka_codes!(
    /// Whether a binding allows or denies (Kafka's `AclPermissionType`).
    AclPermission {
        /// Denies; wins over every allow.
        Deny = 2,
        /// Allows.
        Allow = 3,
    }
);

/// The only name a cluster resource has.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// The name that, as a literal, matches every resource of its type, and
/// as a principal's name or a host, every principal or host.
pub const WILDCARD: &str = "*";

/// The longest resource name, principal or host kept, in bytes.
pub const MAX_ACL_FIELD_BYTES: usize = 1024;

/// One ACL: `principal` from `host` is allowed or denied `operation` on
/// the resources `resource_name` matches by `pattern`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    /// The kind of resource.
    pub resource_type: ResourceType,
    /// The name, matched by `pattern`.
    pub resource_name: String,
    /// How the name is matched.
    pub pattern: PatternType,
    /// `User:name`, or `User:*` for every user.
    pub principal: String,
    /// The client's address, or `*` for any.
    pub host: String,
    /// What is allowed or denied.
    pub operation: AclOperation,
    /// Allowed or denied.
    pub permission: AclPermission,
}

impl AclBinding {
    /// Checks what Kafka checks before storing a binding: a non-empty name
    /// (`kafka-cluster` for the cluster), a `Type:name` principal, a
    /// non-empty host, no control characters, bounded lengths.
    pub fn validate(&self) -> Result<(), AclError> {
        let bad = |why: String| Err(AclError::Invalid(why));
        for (what, value) in [
            ("resource name", &self.resource_name),
            ("principal", &self.principal),
            ("host", &self.host),
        ] {
            if value.is_empty() {
                return bad(format!("empty {what}"));
            }
            if value.len() > MAX_ACL_FIELD_BYTES {
                return bad(format!("{what} longer than {MAX_ACL_FIELD_BYTES} bytes"));
            }
            if value.chars().any(char::is_control) {
                return bad(format!("{what} {value:?} contains a control character"));
            }
        }
        if self.resource_type == ResourceType::Cluster && self.resource_name != CLUSTER_NAME {
            return bad(format!(
                "the cluster resource is named {CLUSTER_NAME:?}, not {:?}",
                self.resource_name
            ));
        }
        if self.pattern == PatternType::Prefixed && self.resource_name == WILDCARD {
            return bad("a prefixed pattern cannot be the wildcard '*'".into());
        }
        match self.principal.split_once(':') {
            Some((kind, name)) if !kind.is_empty() && !name.is_empty() => Ok(()),
            _ => bad(format!(
                "principal {:?} is not of the form Type:name (User:alice)",
                self.principal
            )),
        }
    }
}

/// Why an ACL operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum AclError {
    /// The binding or filter is malformed (Kafka's `INVALID_REQUEST`).
    #[error("invalid ACL: {0}")]
    Invalid(String),
    /// The database failed.
    #[error(transparent)]
    Storage(#[from] crate::StorageError),
}

impl From<sqlx::Error> for AclError {
    fn from(e: sqlx::Error) -> Self {
        Self::Storage(e.into())
    }
}

impl Engine {
    /// Stores `bindings` (each validated first; none is stored if one is
    /// invalid); creating one that exists changes nothing.
    pub async fn create_acls(&self, bindings: &[AclBinding]) -> Result<(), AclError> {
        for binding in bindings {
            binding.validate()?;
        }
        crate::sql::acls::create(&self.inner.store, bindings).await
    }

    /// The bindings `filter` matches.
    pub async fn acls(&self, filter: &AclFilter) -> Result<Vec<AclBinding>, AclError> {
        let all = crate::sql::acls::all(&self.inner.store).await?;
        Ok(all.into_iter().filter(|b| filter.matches(b)).collect())
    }

    /// Deletes what each filter matches, in one transaction; the bindings
    /// deleted, per filter (a binding two filters match is listed twice,
    /// as Kafka does).
    pub async fn delete_acls(
        &self,
        filters: &[AclFilter],
    ) -> Result<Vec<Vec<AclBinding>>, AclError> {
        crate::sql::acls::delete(&self.inner.store, filters).await
    }

    /// The counter every ACL change bumps: equal counters, equal ACLs.
    pub async fn acl_version(&self) -> Result<i64, AclError> {
        crate::sql::acls::version(&self.inner.store).await
    }
}
