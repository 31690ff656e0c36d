//! A Prometheus histogram updated with atomics only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// A histogram with fixed bucket bounds. Cloning shares it.
///
/// An observation is a bucket search over a dozen bounds and three relaxed
/// atomic adds, so request paths can afford one per request; a scrape may
/// see a count and a sum a few observations apart, which Prometheus
/// tolerates (it reads them as separate series anyway).
#[derive(Debug, Clone)]
pub struct Histogram {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    bounds: &'static [f64],
    /// One count per bound, then the `+Inf` bucket (not cumulative).
    counts: Vec<AtomicU64>,
    /// The sum of observations, as `f64` bits.
    sum: AtomicU64,
}

impl Histogram {
    /// An empty histogram with the given upper bounds (ascending).
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            inner: Arc::new(Inner {
                bounds,
                counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
                sum: AtomicU64::new(0f64.to_bits()),
            }),
        }
    }

    /// Records one value.
    pub fn observe(&self, value: f64) {
        let inner = &*self.inner;
        let bucket = inner
            .bounds
            .iter()
            .position(|bound| value <= *bound)
            .unwrap_or(inner.bounds.len());
        inner.counts[bucket].fetch_add(1, Ordering::Relaxed);
        // A compare-and-swap loop: no lock, and rarely more than one turn.
        let _ = inner
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + value).to_bits())
            });
    }

    /// Records the time elapsed since `start`, in seconds.
    pub fn observe_since(&self, start: std::time::Instant) {
        self.observe(start.elapsed().as_secs_f64());
    }

    /// The number of observations so far.
    pub fn count(&self) -> u64 {
        self.inner
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// The sum of observations so far.
    pub fn sum(&self) -> f64 {
        f64::from_bits(self.inner.sum.load(Ordering::Relaxed))
    }
}

impl TypedMetric for Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let inner = &*self.inner;
        let buckets: Vec<(f64, u64)> = inner
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(inner.counts.iter().map(|c| c.load(Ordering::Relaxed)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        encoder.encode_histogram::<NoLabelSet>(self.sum(), count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::registry::Registry;

    #[test]
    fn observations_land_in_cumulative_buckets() {
        let h = Histogram::new(&[1.0, 5.0]);
        for v in [0.5, 1.0, 3.0, 7.0, 9.0] {
            h.observe(v);
        }
        assert_eq!(h.count(), 5);
        assert!((h.sum() - 20.5).abs() < 1e-9);
        let mut registry = Registry::default();
        registry.register("latency", "test", h);
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
            .expect("encoded");
        for line in [
            "latency_bucket{le=\"1\"} 2",
            "latency_bucket{le=\"5\"} 3",
            "latency_bucket{le=\"+Inf\"} 5",
            "latency_count 5",
            "latency_sum 20.5",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
    }

    #[test]
    fn concurrent_observations_are_all_counted() {
        let h = Histogram::new(crate::buckets::SECONDS);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..10_000).for_each(|_| h.observe(0.25)));
            }
        });
        assert_eq!(h.count(), 40_000);
        assert!((h.sum() - 10_000.0).abs() < 1e-6);
    }
}
