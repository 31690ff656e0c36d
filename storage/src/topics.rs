//! Queues as Kafka topics: creating a topic with numbered partitions and
//! growing its partition count.

use crate::error::{Result, StorageError};
use crate::options::QueueOptions;
use crate::Engine;

/// What [`Engine::create_topic`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicCreation {
    /// The topic was created.
    Created,
    /// A queue of that name already exists; nothing changed.
    AlreadyExists,
}

impl Engine {
    /// Creates a queue as a Kafka topic with `partitions` partitions named
    /// `"0"`, `"1"`, … at those Kafka indexes, in one transaction.
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        options: &QueueOptions,
    ) -> Result<TopicCreation> {
        crate::validate_name("topic name", name)?;
        self.check_sealable(options)?;
        if partitions < 1 {
            return Err(StorageError::InvalidInput(format!(
                "a topic needs at least one partition, not {partitions}"
            )));
        }
        let names: Vec<String> = (0..partitions).map(|i| i.to_string()).collect();
        let now = self.inner.clock.now_ms();
        let created =
            crate::sql::catalog::create_queue(&self.inner.store, name, options, &names, now)
                .await?;
        // A topic deleted and created again has new partition ids.
        self.inner.partitions.forget_queue(name);
        Ok(if created {
            TopicCreation::Created
        } else {
            TopicCreation::AlreadyExists
        })
    }

    /// Adds partitions to a topic until it has `total`; each new one is named
    /// after its Kafka index.
    pub async fn create_partitions(&self, name: &str, total: i32) -> Result<()> {
        let info = self
            .queue(name)
            .await?
            .ok_or_else(|| StorageError::QueueNotFound(name.to_owned()))?;
        let current = info.partitions.len() as i32;
        if total <= current {
            return Err(StorageError::InvalidInput(format!(
                "topic {name:?} has {current} partitions; the new count must be larger, not {total}"
            )));
        }
        for index in current..total {
            let partition = index.to_string();
            if info.partitions.iter().any(|p| p.name == partition) {
                return Err(StorageError::InvalidInput(format!(
                    "queue {name:?} already has a partition named {partition:?} at another index"
                )));
            }
            crate::sql::catalog::ensure_partition(
                &self.inner.store,
                name,
                &partition,
                &QueueOptions::for_kafka_topic(),
                self.inner.clock.now_ms(),
            )
            .await?;
        }
        self.inner.partitions.forget_queue(name);
        Ok(())
    }
}
