//! The filters DescribeAcls and DeleteAcls select bindings with: each
//! field either names a value or matches any (Kafka's `AclBindingFilter`).

use super::{AclBinding, AclOperation, AclPermission, PatternType, ResourceType, WILDCARD};

/// How a filter selects by pattern (Kafka's filter pattern types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternFilter {
    /// Any pattern; the name, if given, compared as is.
    Any,
    /// The bindings that would apply to the named resource: its literal,
    /// the literal `*`, and every prefix of it.
    Match,
    /// Bindings of exactly this pattern type.
    Exactly(PatternType),
}

impl PatternFilter {
    /// The filter with Kafka code `code` (1 ANY, 2 MATCH, 3 LITERAL,
    /// 4 PREFIXED).
    pub fn from_code(code: i8) -> Option<Self> {
        match code {
            1 => Some(Self::Any),
            2 => Some(Self::Match),
            _ => PatternType::from_code(code).map(Self::Exactly),
        }
    }
}

/// Selects bindings; `None` is Kafka's ANY (or a null string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    /// The kind of resource.
    pub resource_type: Option<ResourceType>,
    /// The resource name.
    pub resource_name: Option<String>,
    /// How bindings' patterns are selected.
    pub pattern: PatternFilter,
    /// The principal, as stored (`User:*` matches only bindings for `User:*`).
    pub principal: Option<String>,
    /// The host, as stored.
    pub host: Option<String>,
    /// The operation (`All` matches only bindings for ALL).
    pub operation: Option<AclOperation>,
    /// The permission.
    pub permission: Option<AclPermission>,
}

impl AclFilter {
    /// The filter that matches every binding.
    pub fn any() -> Self {
        Self {
            resource_type: None,
            resource_name: None,
            pattern: PatternFilter::Any,
            principal: None,
            host: None,
            operation: None,
            permission: None,
        }
    }

    /// Whether `binding` is selected.
    pub fn matches(&self, binding: &AclBinding) -> bool {
        fn field<T: PartialEq>(wanted: Option<&T>, value: &T) -> bool {
            wanted.is_none_or(|w| w == value)
        }
        field(self.resource_type.as_ref(), &binding.resource_type)
            && self.matches_name(binding)
            && field(self.principal.as_ref(), &binding.principal)
            && field(self.host.as_ref(), &binding.host)
            && field(self.operation.as_ref(), &binding.operation)
            && field(self.permission.as_ref(), &binding.permission)
    }

    fn matches_name(&self, binding: &AclBinding) -> bool {
        let name = self.resource_name.as_deref();
        match self.pattern {
            PatternFilter::Any => name.is_none_or(|n| n == binding.resource_name),
            PatternFilter::Exactly(p) => {
                p == binding.pattern && name.is_none_or(|n| n == binding.resource_name)
            }
            PatternFilter::Match => name.is_none_or(|n| match binding.pattern {
                PatternType::Literal => {
                    binding.resource_name == n || binding.resource_name == WILDCARD
                }
                PatternType::Prefixed => n.starts_with(&binding.resource_name),
            }),
        }
    }
}
