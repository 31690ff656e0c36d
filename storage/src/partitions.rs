//! Resolving names to partition ids: (queue, partition name) for native
//! pushes, (topic, Kafka index) for the Kafka facade, both served from one
//! cache so a hot path does not read the catalog per request; and a
//! queue's id and options, which every pop needs.
//!
//! A cached id only saves a round trip. When its queue is deleted (here, or
//! through another broker) the id goes stale: an append to it finds the
//! partition row gone and the caller resolves again, and every engine
//! operation that learns a partition is gone forgets its queue here.
//!
//! A queue's options are used for [`QUEUE_FRESH_FOR`] after they were
//! read: this broker's own changes (configure, topic configs, deletion)
//! forget the queue at once; another broker's are seen within that time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::error::Result;
use crate::model::{PartitionId, QueueInfo};
use crate::options::QueueOptions;
use crate::Engine;

/// Bound on the entries kept; past it the cache starts afresh.
const LIMIT: usize = 100_000;

/// How long a queue's id and options are used after they were read (ms of
/// the engine's clock).
const QUEUE_FRESH_FOR: i64 = 1_000;

/// A queue's id and options, as a pop reads them.
#[derive(Debug, Clone)]
pub(crate) struct QueueRef {
    pub id: i64,
    pub options: Arc<QueueOptions>,
}

/// The keyings of the partition ids, and the queues read for pops.
#[derive(Debug, Default)]
struct Maps {
    by_name: HashMap<(String, String), PartitionId>,
    by_index: HashMap<(String, i32), PartitionId>,
    queues: HashMap<String, (i64, QueueRef)>,
}

/// A bounded cache of partition ids by name and by Kafka index.
#[derive(Debug, Default)]
pub(crate) struct PartitionCache {
    maps: Mutex<Maps>,
}

impl PartitionCache {
    /// The cached id of partition `partition` of `queue`.
    pub(crate) fn by_name(&self, queue: &str, partition: &str) -> Option<PartitionId> {
        let key = (queue.to_owned(), partition.to_owned());
        self.maps().by_name.get(&key).copied()
    }

    /// The cached id of partition `index` of topic `topic`.
    pub(crate) fn by_index(&self, topic: &str, index: i32) -> Option<PartitionId> {
        self.maps()
            .by_index
            .get(&(topic.to_owned(), index))
            .copied()
    }

    /// Remembers one partition of a queue, by name.
    pub(crate) fn put(&self, queue: &str, partition: &str, id: PartitionId) {
        let mut maps = self.maps();
        maps.make_room();
        maps.by_name
            .insert((queue.to_owned(), partition.to_owned()), id);
    }

    /// Remembers every partition of a queue, by name and by Kafka index.
    pub(crate) fn put_queue(&self, info: &QueueInfo) {
        let mut maps = self.maps();
        maps.make_room();
        for p in &info.partitions {
            maps.by_name
                .insert((info.name.clone(), p.name.clone()), p.id);
            maps.by_index
                .insert((info.name.clone(), p.kafka_index), p.id);
        }
    }

    /// The id and options of `queue`, when read less than
    /// [`QUEUE_FRESH_FOR`] before `now` (ms).
    pub(crate) fn queue(&self, queue: &str, now: i64) -> Option<QueueRef> {
        self.maps()
            .queues
            .get(queue)
            .filter(|(at, _)| (0..QUEUE_FRESH_FOR).contains(&now.saturating_sub(*at)))
            .map(|(_, found)| found.clone())
    }

    /// Remembers the id and options of `queue`, as read at `now` (ms).
    pub(crate) fn put_queue_ref(&self, queue: &str, found: QueueRef, now: i64) {
        let mut maps = self.maps();
        maps.make_room();
        maps.queues.insert(queue.to_owned(), (now, found));
    }

    /// Forgets everything cached of a queue.
    pub(crate) fn forget_queue(&self, queue: &str) {
        let mut maps = self.maps();
        maps.by_name.retain(|(q, _), _| q != queue);
        maps.by_index.retain(|(q, _), _| q != queue);
        maps.queues.remove(queue);
    }

    fn maps(&self) -> MutexGuard<'_, Maps> {
        self.maps.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Engine {
    /// The id and options of a queue, read again once the cached ones are
    /// stale. A queue not found is not remembered: a push may create it any
    /// moment.
    pub(crate) async fn queue_ref(&self, queue: &str) -> Result<Option<QueueRef>> {
        let cache = &self.inner.partitions;
        let now = self.inner.clock.now_ms();
        if let Some(found) = cache.queue(queue, now) {
            return Ok(Some(found));
        }
        let Some((id, options)) = crate::sql::consume::queue_ref(&self.inner.store, queue).await?
        else {
            return Ok(None);
        };
        let found = QueueRef {
            id,
            options: options.into(),
        };
        cache.put_queue_ref(queue, found.clone(), now);
        Ok(Some(found))
    }

    /// The options of a queue, as read at most [`QUEUE_FRESH_FOR`] ms ago:
    /// this broker's own changes are seen at once, another broker's within
    /// that time. `None` when the queue does not exist.
    pub async fn queue_options(&self, queue: &str) -> Result<Option<Arc<QueueOptions>>> {
        Ok(self.queue_ref(queue).await?.map(|found| found.options))
    }
}

impl Maps {
    fn make_room(&mut self) {
        if self.by_name.len() + self.by_index.len() + self.queues.len() >= LIMIT {
            self.by_name.clear();
            self.by_index.clear();
            self.queues.clear();
        }
    }
}
