//! The families read from the database (and the pools) at scrape time:
//! offsets and sizes per topic, lag per group, pools, the database's size.
//! Each scrape clears them and fills them afresh, so a deleted topic or
//! group disappears instead of lingering with its last value.

use std::collections::BTreeMap;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use storage::{Engine, GroupLag, TopicStats};

/// Labels built at scrape time: `topic`, then `partition` only when the
/// broker counts per partition (an absent label, not an empty one).
type Labels = Vec<(&'static str, String)>;

/// The scrape-time families.
#[derive(Debug, Default)]
pub(super) struct DatabaseFamilies {
    partitions: Family<Labels, Gauge>,
    high_watermark: Family<Labels, Gauge>,
    log_start: Family<Labels, Gauge>,
    stored_bytes: Family<Labels, Gauge>,
    lag: Family<Labels, Gauge>,
    pool_connections: Family<Labels, Gauge>,
    pool_max: Family<Labels, Gauge>,
    database_bytes: Gauge,
}

impl DatabaseFamilies {
    /// Registers the families into `registry` (prefixed `queen`).
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "topic_partitions",
            "Partitions of each topic (queue)",
            self.partitions.clone(),
        );
        registry.register(
            "topic_high_watermark",
            "Next offset of each topic, summed over its partitions (per partition with --metrics-per-partition); its rate is the append rate",
            self.high_watermark.clone(),
        );
        registry.register(
            "topic_log_start_offset",
            "First stored offset of each topic, summed over its partitions (per partition with --metrics-per-partition)",
            self.log_start.clone(),
        );
        registry.register(
            "topic_stored_bytes",
            "Estimated stored size of each topic: records from the log start on times the bytes per record of the newest segment",
            self.stored_bytes.clone(),
        );
        registry.register(
            "consumer_group_lag",
            "Records stored after a consumer group's positions (Kafka and native groups alike), per group and topic (per partition with --metrics-per-partition)",
            self.lag.clone(),
        );
        registry.register(
            "db_pool_connections",
            "Database connections of each pool, by state (idle, in_use)",
            self.pool_connections.clone(),
        );
        registry.register(
            "db_pool_max_connections",
            "The most connections each pool opens",
            self.pool_max.clone(),
        );
        registry.register(
            "database_size_bytes",
            "Size of the database (SQLite: its file without the WAL; PostgreSQL: the database)",
            self.database_bytes.clone(),
        );
    }

    /// Reads everything afresh: the pools from memory, the rest in three
    /// statements on a reader (never the writer).
    pub(super) async fn refresh(
        &self,
        engine: &Engine,
        per_partition: bool,
    ) -> storage::Result<()> {
        self.pools(engine);
        let topics = engine.topic_stats(per_partition).await?;
        let lag = engine.group_lag(per_partition).await?;
        let size = engine.database_bytes().await?;
        self.topics(&topics); // clears the lag too
        self.lag(&lag);
        self.database_bytes.set(size);
        Ok(())
    }

    /// Drops the figures read from the database, when reading them failed:
    /// absent rather than stale.
    pub(super) fn forget(&self) {
        for family in [
            &self.partitions,
            &self.high_watermark,
            &self.log_start,
            &self.stored_bytes,
            &self.lag,
        ] {
            family.clear();
        }
    }

    fn pools(&self, engine: &Engine) {
        self.pool_connections.clear();
        self.pool_max.clear();
        for p in engine.pool_stats() {
            let pool = p.pool.name().to_owned();
            let idle = p.open.saturating_sub(p.in_use);
            for (state, n) in [("idle", idle), ("in_use", p.in_use)] {
                self.pool_connections
                    .get_or_create(&vec![("pool", pool.clone()), ("state", state.to_owned())])
                    .set(i64::from(n));
            }
            self.pool_max
                .get_or_create(&vec![("pool", pool)])
                .set(i64::from(p.max));
        }
    }

    fn topics(&self, stats: &[TopicStats]) {
        self.forget();
        let mut partitions: BTreeMap<&str, i64> = BTreeMap::new();
        for s in stats {
            *partitions.entry(&s.topic).or_default() += s.partitions;
            let labels = labels(&s.topic, s.partition.as_deref());
            self.high_watermark
                .get_or_create(&labels)
                .set(s.high_watermark);
            self.log_start.get_or_create(&labels).set(s.log_start);
            self.stored_bytes
                .get_or_create(&labels)
                .set(s.stored_bytes_estimate.round() as i64);
        }
        for (topic, n) in partitions {
            self.partitions.get_or_create(&labels(topic, None)).set(n);
        }
    }

    fn lag(&self, lag: &[GroupLag]) {
        for l in lag {
            let mut labels = vec![("group", l.group.clone())];
            labels.extend(self::labels(&l.topic, l.partition.as_deref()));
            self.lag.get_or_create(&labels).set(l.lag);
        }
    }
}

fn labels(topic: &str, partition: Option<&str>) -> Labels {
    let mut labels = vec![("topic", topic.to_owned())];
    if let Some(p) = partition {
        labels.push(("partition", p.to_owned()));
    }
    labels
}
