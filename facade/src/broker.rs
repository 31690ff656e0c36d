//! What every handler of this broker can reach: the engine, the settings,
//! this broker's identity, and Kafka names resolved to partitions.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kafka_protocol::ResponseError;
use storage::offsets_log;
use storage::{
    Access, AclOperation, Authorizer, BrokerInfo, Engine, PartitionId, QueueInfo, QueueOptions,
    StorageError, TopicCreation,
};
use tokio::sync::OwnedSemaphorePermit;
use uuid::Uuid;

use crate::budget::Budget;
use crate::groups::Coordinator;
use crate::produce_rules::ProduceRules;
use crate::FacadeConfig;

/// How often a broker renews its registration.
pub(crate) const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(2);
/// A broker silent for this long is no longer listed in Metadata.
pub(crate) const LIVENESS_MS: i64 = 10_000;
/// How long the live brokers read for coordinator checks are reused.
const COORDINATOR_CACHE: Duration = Duration::from_secs(1);

/// One broker's state, shared by its connections.
#[derive(Debug)]
pub struct Broker {
    /// The storage engine.
    pub engine: Engine,
    /// The listener's settings.
    pub config: FacadeConfig,
    /// This broker's id in the registry.
    pub node_id: i32,
    /// The cluster id shared by the brokers on the database.
    pub cluster_id: String,
    /// Membership of the groups this broker coordinates.
    pub groups: Coordinator,
    /// What principals may do, by the ACLs (shared with the HTTP door).
    pub authorizer: Arc<Authorizer>,
    /// The live brokers as last read, and when: coordinator checks run on
    /// every group request and need not each read the registry.
    live: Mutex<Option<(tokio::time::Instant, Vec<BrokerInfo>)>>,
    /// What requests in flight may hold, across connections.
    budget: Budget,
}

impl Broker {
    /// Registers the broker under its first listener's advertised address
    /// (its identity), with every listener's address by name.
    pub async fn register(engine: Engine, config: FacadeConfig) -> Result<Self, StorageError> {
        let primary = config.primary_listener();
        let node_id = engine
            .register_broker(&primary.advertised_host, primary.advertised_port)
            .await?;
        let endpoints: Vec<_> = config
            .listeners
            .iter()
            .map(|l| (l.name.clone(), l.advertised_host.clone(), l.advertised_port))
            .collect();
        engine.register_listeners(node_id, &endpoints).await?;
        let cluster_id = engine.cluster_id().await?;
        let budget = Budget::new(config.max_in_flight_bytes);
        let authorizer = Arc::new(Authorizer::new(
            engine.clone(),
            config.authorization.clone(),
        ));
        Ok(Self {
            engine,
            groups: Coordinator::new(config.group_limits),
            authorizer,
            config,
            node_id,
            cluster_id,
            live: Mutex::new(None),
            budget,
        })
    }

    /// Waits until a request of `bytes` fits in the in-flight budget (a
    /// request larger than the whole budget waits for all of it); the permit
    /// returns the room when dropped.
    pub async fn request_budget(&self, bytes: usize) -> OwnedSemaphorePermit {
        self.budget.acquire(bytes).await
    }

    /// The most record bytes one fetch answers, whatever its `max_bytes`:
    /// its records are held twice (read and written) until the answer is
    /// written, and that charge is at most a quarter of the budget, since
    /// the fetch already holds its request's share while it waits for room
    /// and must never need all of it (an eighth of the budget: 1.75 MiB of
    /// the default 16 MiB). A client asking for more gets it over more
    /// fetches, as KIP-74 allows a broker's own limit to cut an answer.
    pub(crate) fn fetch_answer_limit(&self) -> usize {
        (self.budget.largest() / 8).max(1)
    }

    /// Waits until a fetch's answer of up to `bytes` (its records read and
    /// encoded) fits in the in-flight budget, counting at most twice
    /// [`Self::fetch_answer_limit`].
    pub async fn answer_budget(&self, bytes: usize) -> OwnedSemaphorePermit {
        self.request_budget(bytes.min(2 * self.fetch_answer_limit()))
            .await
    }

    /// A small room of the in-flight budget for a fetch's answer, if one is
    /// free at once: the permit and its bytes (see [`Budget::try_small`]).
    pub(crate) fn small_answer_budget(&self) -> Option<(OwnedSemaphorePermit, usize)> {
        self.budget.try_small()
    }

    /// Keeps the registration alive until `shutdown` resolves. A heartbeat
    /// under way then finishes first: a write cut off at the wrong moment
    /// can leave its connection inside a transaction.
    pub async fn heartbeat_until(&self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut tick = tokio::time::interval(HEARTBEAT_INTERVAL);
        loop {
            tokio::select! {
                () = &mut shutdown => return,
                _ = tick.tick() => {
                    if let Err(e) = self.engine.broker_heartbeat(self.node_id).await {
                        tracing::warn!(error = %e, "kafka: broker heartbeat failed");
                    }
                }
            }
        }
    }

    /// Withdraws the registration, so that other brokers stop sending
    /// clients here (their Metadata lists live brokers only).
    pub async fn leave(&self) {
        if let Err(e) = self.engine.broker_leave(self.node_id).await {
            tracing::warn!(error = %e, "kafka: withdrawing the broker's registration failed");
        }
    }

    /// The live brokers, at their addresses on the listener named
    /// `listener`; this one at least, even if its heartbeat is late.
    pub async fn live_brokers(&self, listener: &str) -> Result<Vec<BrokerInfo>, StorageError> {
        let mut brokers = self.engine.live_brokers_on(LIVENESS_MS, listener).await?;
        if !brokers.iter().any(|b| b.id == self.node_id) {
            let mine = self
                .config
                .listeners
                .iter()
                .find(|l| l.name == listener)
                .map(|l| &**l)
                .unwrap_or_else(|| self.config.primary_listener());
            brokers.push(BrokerInfo {
                id: self.node_id,
                host: mine.advertised_host.clone(),
                port: mine.advertised_port,
            });
            brokers.sort_by_key(|b| b.id);
        }
        Ok(brokers)
    }

    /// The broker that coordinates `key` (a group id) among `brokers`:
    /// the highest score of key and broker id (rendezvous hashing), so
    /// every broker picks the same one, and a broker joining or leaving
    /// moves only the groups it gains or loses.
    pub fn coordinator<'a>(brokers: &'a [BrokerInfo], key: &str) -> Option<&'a BrokerInfo> {
        brokers.iter().max_by_key(|b| {
            // FNV-1a: stable across processes and versions, unlike std's hasher.
            key.bytes()
                .chain(b.id.to_be_bytes())
                .fold(0xcbf2_9ce4_8422_2325u64, |h, byte| {
                    (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
                })
        })
    }

    /// Whether this broker coordinates `group`, by the live brokers read at
    /// most a second ago.
    pub async fn coordinates(&self, group: &str) -> Result<bool, StorageError> {
        let fresh = {
            let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            live.as_ref()
                .filter(|(at, _)| at.elapsed() < COORDINATOR_CACHE)
                .map(|(_, brokers)| Self::coordinator(brokers, group).map(|b| b.id))
        };
        let id = match fresh {
            Some(id) => id,
            None => {
                // Only ids matter here: any listener's view will do.
                let brokers = self
                    .live_brokers(&self.config.primary_listener().name)
                    .await?;
                let id = Self::coordinator(&brokers, group).map(|b| b.id);
                *self.live.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some((tokio::time::Instant::now(), brokers));
                id
            }
        };
        Ok(id == Some(self.node_id))
    }

    /// Why this broker cannot serve a membership request for `group`:
    /// an empty id, or another broker coordinates it.
    pub async fn group_error(&self, group: &str) -> Option<ResponseError> {
        if group.is_empty() {
            return Some(ResponseError::InvalidGroupId);
        }
        match self.coordinates(group).await {
            Ok(true) => None,
            Ok(false) => Some(ResponseError::NotCoordinator),
            Err(e) => {
                tracing::warn!(error = %e, "kafka: cannot read the live brokers");
                Some(ResponseError::CoordinatorNotAvailable)
            }
        }
    }

    /// Why a member's request for `group` cannot be served: READ on the
    /// group is not allowed, or [`Broker::group_error`].
    pub async fn member_error(&self, access: &Access, group: &str) -> Option<ResponseError> {
        if !access.group(AclOperation::Read, group) {
            return Some(ResponseError::GroupAuthorizationFailed);
        }
        self.group_error(group).await
    }

    /// The leader a partition is advertised on: partitions are spread over
    /// the live brokers, although any broker serves any partition.
    pub fn leader(brokers: &[BrokerInfo], topic: &str, index: i32) -> i32 {
        let spread = topic
            .bytes()
            .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        let n = brokers.len().max(1) as u32;
        let slot = spread.wrapping_add(index as u32) % n;
        brokers.get(slot as usize).map_or(-1, |b| b.id)
    }

    /// The topic, created with the broker's defaults when it does not exist
    /// and `create` allows it. Names reserved for internal topics (`__…`)
    /// are never created for a client; the broker's own offsets topic is
    /// created when first asked for, as Kafka creates it.
    pub async fn topic(&self, name: &str, create: bool) -> Result<Option<QueueInfo>, StorageError> {
        if let Some(info) = self.engine.queue(name).await? {
            return Ok(Some(info));
        }
        if offsets_log::is_internal(name) {
            self.engine.ensure_offsets_topic().await?;
            return self.engine.queue(name).await;
        }
        if !(create && self.config.auto_create_topics) || crate::topic_name::reserved(name) {
            return Ok(None);
        }
        if let Some(why) = crate::topic_name::illegal(name) {
            return Err(StorageError::InvalidInput(why));
        }
        let options = QueueOptions::for_kafka_topic();
        if self
            .engine
            .create_topic(name, self.config.default_partitions, &options)
            .await?
            == TopicCreation::Created
        {
            tracing::info!(topic = name, "kafka: auto-created topic");
        }
        self.engine.queue(name).await
    }

    /// What a produce to `topic` must meet, from its configs as the engine
    /// keeps them (read at most a second ago; the defaults for a topic that
    /// does not exist yet).
    pub(crate) async fn produce_rules(&self, topic: &str) -> Result<ProduceRules, StorageError> {
        let options = self.engine.queue_options(topic).await?;
        Ok(ProduceRules::of(
            options.as_deref(),
            self.config.max_message_bytes,
        ))
    }

    /// The name of the topic with Kafka topic id `id`.
    pub async fn topic_name(&self, id: Uuid) -> Result<Option<String>, StorageError> {
        self.engine.topic_name(id).await
    }

    /// The id of partition `index` of `topic` (created with the broker's
    /// defaults when `create` and auto-creation allow); `None` when there is
    /// no such partition.
    pub async fn partition_id(
        &self,
        topic: &str,
        index: i32,
        create: bool,
    ) -> Result<Option<PartitionId>, StorageError> {
        if let Some(id) = self.engine.kafka_partition(topic, index).await? {
            return Ok(Some(id));
        }
        if create && self.topic(topic, true).await?.is_some() {
            return self.engine.kafka_partition(topic, index).await;
        }
        Ok(None)
    }
}
