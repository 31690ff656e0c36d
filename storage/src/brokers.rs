//! The registry of brokers sharing the database.

use crate::error::Result;
use crate::model::BrokerInfo;
use crate::Engine;

impl Engine {
    /// Registers this broker under its advertised address; the id is stable
    /// for that address across restarts.
    pub async fn register_broker(&self, host: &str, port: i32) -> Result<i32> {
        crate::sql::brokers::register(&self.inner.store, host, port, self.inner.clock.now_ms())
            .await
    }

    /// Records that broker `id` is alive.
    pub async fn broker_heartbeat(&self, id: i32) -> Result<()> {
        crate::sql::brokers::set_heartbeat(&self.inner.store, id, self.inner.clock.now_ms()).await
    }

    /// Records that broker `id` has stopped: the others stop listing it at
    /// once, rather than send clients to it until its heartbeat is stale.
    pub async fn broker_leave(&self, id: i32) -> Result<()> {
        crate::sql::brokers::set_heartbeat(&self.inner.store, id, 0).await
    }

    /// The brokers that sent a heartbeat within the last `within_ms`.
    pub async fn live_brokers(&self, within_ms: i64) -> Result<Vec<BrokerInfo>> {
        let since = self.inner.clock.now_ms().saturating_sub(within_ms);
        crate::sql::brokers::live(&self.inner.store, since).await
    }

    /// Records broker `id`'s listeners as `(name, advertised host, port)`,
    /// replacing those it had.
    pub async fn register_listeners(
        &self,
        id: i32,
        listeners: &[(String, String, i32)],
    ) -> Result<()> {
        crate::sql::brokers::register_listeners(&self.inner.store, id, listeners).await
    }

    /// The live brokers as a client of `listener` must reach them: each
    /// broker's address on the listener of that name, or its registered
    /// address when it declared no such listener.
    pub async fn live_brokers_on(&self, within_ms: i64, listener: &str) -> Result<Vec<BrokerInfo>> {
        let since = self.inner.clock.now_ms().saturating_sub(within_ms);
        crate::sql::brokers::live_on(&self.inner.store, since, listener).await
    }

    /// The id of the cluster, the same for every broker on the database.
    pub async fn cluster_id(&self) -> Result<String> {
        crate::sql::brokers::cluster_id(&self.inner.store).await
    }
}
