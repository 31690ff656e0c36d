//! Configs of Kafka resources other than topics: the dynamic configs of
//! brokers (per broker, or the cluster-wide default) and of groups, set
//! with AlterConfigs or IncrementalAlterConfigs. They are kept in the
//! database (`kafka_resource_configs`), so every broker on it describes
//! the same values. Each change is checked whole against the catalogue
//! (`catalogue`) before anything is written; a refused one writes nothing.

mod catalogue;

use std::collections::BTreeMap;

use crate::error::Result;
use crate::sql;
use crate::topic_configs::{list_items, ConfigDef, ConfigError, ConfigOp, ConfigType};
use crate::Engine;

/// A resource with configs of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigResource {
    /// A broker by node id; `""` is the default of every broker.
    Broker(String),
    /// A consumer group by id.
    Group(String),
}

impl ConfigResource {
    /// Kafka's `ConfigResource` type code.
    pub fn code(&self) -> i16 {
        match self {
            Self::Broker(_) => 4,
            Self::Group(_) => 32,
        }
    }

    fn name(&self) -> &str {
        match self {
            Self::Broker(name) | Self::Group(name) => name,
        }
    }

    fn catalogue(&self) -> &'static [ConfigDef] {
        match self {
            Self::Broker(_) => catalogue::BROKER,
            Self::Group(_) => catalogue::GROUP,
        }
    }

    /// The dynamic config `name` of this kind of resource; a name it does
    /// not have is refused as Kafka refuses a config it cannot change
    /// while running.
    fn def(&self, name: &str) -> Result<&'static ConfigDef, ConfigError> {
        catalogue::find(self.catalogue(), name).ok_or_else(|| match self {
            Self::Broker(_) => ConfigError::Request(format!(
                "Cannot update these configs dynamically: Set({name})"
            )),
            Self::Group(_) => ConfigError::Invalid(format!("Unknown group config name: {name}")),
        })
    }
}

/// Where a described value comes from (Kafka's `ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// Set on this broker.
    DynamicBroker,
    /// Set as the default of every broker.
    DynamicDefaultBroker,
    /// Set on the group.
    Group,
    /// Not set: the default.
    Default,
}

impl ConfigSource {
    /// The wire code.
    pub fn code(self) -> i8 {
        match self {
            Self::DynamicBroker => 2,
            Self::DynamicDefaultBroker => 3,
            Self::Default => 5,
            Self::Group => 8,
        }
    }
}

/// One described config: its effective value, where it comes from, and
/// the values it would take in order of precedence (Kafka's synonyms).
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedResourceConfig {
    /// The config's name.
    pub name: &'static str,
    /// The value in force.
    pub value: String,
    /// Where that value comes from.
    pub source: ConfigSource,
    /// Its type.
    pub config_type: ConfigType,
    /// What it does here.
    pub doc: &'static str,
    /// (name, value, source), the value in force first.
    pub synonyms: Vec<(&'static str, String, ConfigSource)>,
}

impl Engine {
    /// The configs set on `resource`, by name.
    pub async fn resource_configs(
        &self,
        resource: &ConfigResource,
    ) -> Result<BTreeMap<String, String>> {
        sql::resource_configs::get(&self.inner.store, resource.code(), resource.name()).await
    }

    /// Every dynamic config of `resource` with its value in force: for a
    /// broker, what is set on it, else the cluster-wide default, else the
    /// default.
    pub async fn describe_resource_configs(
        &self,
        resource: &ConfigResource,
    ) -> Result<Vec<DescribedResourceConfig>> {
        let own = self.resource_configs(resource).await?;
        let (own_source, fallback) = match resource {
            ConfigResource::Broker(name) if name.is_empty() => {
                (ConfigSource::DynamicDefaultBroker, BTreeMap::new())
            }
            ConfigResource::Broker(_) => (
                ConfigSource::DynamicBroker,
                self.resource_configs(&ConfigResource::Broker(String::new()))
                    .await?,
            ),
            ConfigResource::Group(_) => (ConfigSource::Group, BTreeMap::new()),
        };
        Ok(resource
            .catalogue()
            .iter()
            .map(|def| {
                let mut synonyms = Vec::new();
                if let Some(v) = own.get(def.name) {
                    synonyms.push((def.name, v.clone(), own_source));
                }
                if let Some(v) = fallback.get(def.name) {
                    synonyms.push((def.name, v.clone(), ConfigSource::DynamicDefaultBroker));
                }
                synonyms.push((
                    def.broker_synonym,
                    def.default_value(0),
                    ConfigSource::Default,
                ));
                let (_, value, source) = synonyms[0].clone();
                DescribedResourceConfig {
                    name: def.name,
                    value,
                    source,
                    config_type: def.config_type,
                    doc: def.doc,
                    synonyms,
                }
            })
            .collect())
    }

    /// AlterConfigs: the configs set on `resource` become exactly
    /// `configs` (a `None` value is not set). With `validate_only`, only
    /// checks. `Ok(Err(_))` is a refused change; nothing was written.
    pub async fn replace_resource_configs(
        &self,
        resource: &ConfigResource,
        configs: &[(String, Option<String>)],
        validate_only: bool,
    ) -> Result<Result<(), ConfigError>> {
        let changes: Vec<(String, ConfigOp)> = configs
            .iter()
            .map(|(name, value)| {
                let op = value.clone().map_or(ConfigOp::Delete, ConfigOp::Set);
                (name.clone(), op)
            })
            .collect();
        self.change_resource_configs(resource, &changes, true, validate_only)
            .await
    }

    /// IncrementalAlterConfigs: each change applied in order to the
    /// configs set on `resource`, the whole checked before it is stored.
    pub async fn alter_resource_configs(
        &self,
        resource: &ConfigResource,
        changes: &[(String, ConfigOp)],
        validate_only: bool,
    ) -> Result<Result<(), ConfigError>> {
        self.change_resource_configs(resource, changes, false, validate_only)
            .await
    }

    async fn change_resource_configs(
        &self,
        resource: &ConfigResource,
        changes: &[(String, ConfigOp)],
        replace: bool,
        validate_only: bool,
    ) -> Result<Result<(), ConfigError>> {
        let now = self.inner.clock.now_ms();
        let mut tx = self.inner.store.begin_write().await?;
        let code = resource.code();
        let current = if replace {
            BTreeMap::new()
        } else {
            sql::resource_configs::get_in(&mut tx.conn(), code, resource.name()).await?
        };
        let new = match apply(resource, current, changes) {
            Ok(new) => new,
            Err(e) => return Ok(Err(e)),
        };
        if validate_only {
            return Ok(Ok(()));
        }
        sql::resource_configs::put(&mut tx.conn(), code, resource.name(), &new, now).await?;
        tx.commit().await?;
        Ok(Ok(()))
    }
}

/// The configs after `changes`, each checked against the catalogue.
fn apply(
    resource: &ConfigResource,
    mut configs: BTreeMap<String, String>,
    changes: &[(String, ConfigOp)],
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut seen = std::collections::BTreeSet::new();
    for (name, op) in changes {
        if !seen.insert(name) {
            return Err(ConfigError::Request(format!(
                "Error due to duplicate config keys: {name} is given more than once"
            )));
        }
        let def = resource.def(name)?;
        let edit_list = |value: &str, add: bool, configs: &BTreeMap<String, String>| {
            if def.config_type != ConfigType::List {
                return Err(ConfigError::Invalid(format!(
                    "Config value append is not allowed for config key: {name}"
                )));
            }
            let default = def.default_value(0);
            let current = configs.get(name).unwrap_or(&default);
            let mut items: Vec<String> =
                list_items(current).into_iter().map(str::to_owned).collect();
            for item in list_items(value) {
                let present = items.iter().any(|i| i == item);
                if add && !present {
                    items.push(item.to_owned());
                } else if !add {
                    items.retain(|i| i != item);
                }
            }
            Ok(items.join(","))
        };
        let value = match op {
            ConfigOp::Set(value) => Some(value.clone()),
            ConfigOp::Delete => None,
            ConfigOp::Append(value) => Some(edit_list(value, true, &configs)?),
            ConfigOp::Subtract(value) => Some(edit_list(value, false, &configs)?),
        };
        match value {
            Some(value) => {
                def.check(&value)?;
                configs.insert(name.clone(), value);
            }
            None => {
                configs.remove(name);
            }
        }
    }
    Ok(configs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker() -> ConfigResource {
        ConfigResource::Broker("1".to_owned())
    }

    #[test]
    fn dynamic_configs_are_checked_and_static_ones_refused() {
        let set = |name: &str, value: &str| vec![(name.to_owned(), ConfigOp::Set(value.into()))];
        let ok =
            apply(&broker(), BTreeMap::new(), &set("background.threads", "9")).expect("dynamic");
        assert_eq!(ok.get("background.threads").map(String::as_str), Some("9"));
        assert!(matches!(
            apply(
                &broker(),
                BTreeMap::new(),
                &set("background.threads", "nine")
            ),
            Err(ConfigError::Invalid(_))
        ));
        assert!(matches!(
            apply(&broker(), BTreeMap::new(), &set("message.max.bytes", "1")),
            Err(ConfigError::Request(_))
        ));
        assert!(matches!(
            apply(&broker(), BTreeMap::new(), &set("no.such.config", "1")),
            Err(ConfigError::Request(_))
        ));
    }

    #[test]
    fn lists_take_appends_and_subtractions() {
        let policy = "log.cleanup.policy".to_owned();
        let appended = apply(
            &broker(),
            BTreeMap::new(),
            &[(policy.clone(), ConfigOp::Append("compact".into()))],
        )
        .expect("append");
        assert_eq!(appended[&policy], "delete,compact");
        let subtracted = apply(
            &broker(),
            appended,
            &[(policy.clone(), ConfigOp::Subtract("compact".into()))],
        )
        .expect("subtract");
        assert_eq!(subtracted[&policy], "delete");
        let not_a_list = apply(
            &broker(),
            BTreeMap::new(),
            &[("background.threads".into(), ConfigOp::Append("1".into()))],
        );
        assert!(matches!(not_a_list, Err(ConfigError::Invalid(_))));
    }
}
