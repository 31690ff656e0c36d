//! The broker's recent traffic: a ring of per-interval counts over the last
//! 15 minutes, sampled from the traffic counters `/metrics` already keeps
//! (`telemetry::TRAFFIC`), so the hot paths do nothing more for it.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use telemetry::{Door, TRAFFIC};
use tokio_util::sync::CancellationToken;

/// How often the counters are sampled: one point of the chart.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// How far back the history goes.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);

/// The points kept: the window in intervals.
const POINTS: usize = (WINDOW.as_secs() / INTERVAL.as_secs()) as usize;

/// What one door moved, as running totals or as one interval's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoorCounts {
    /// Records accepted (Kafka Produce, HTTP push).
    pub records_in: u64,
    /// Records delivered (Kafka Fetch, HTTP pop).
    pub records_out: u64,
    /// Payload bytes accepted.
    pub bytes_in: u64,
    /// Payload bytes delivered.
    pub bytes_out: u64,
}

impl DoorCounts {
    /// The door's totals since the process started.
    fn now(door: Door) -> Self {
        let t = TRAFFIC.door(door);
        Self {
            records_in: t.records_in.get(),
            records_out: t.records_out.get(),
            bytes_in: t.bytes_in.get(),
            bytes_out: t.bytes_out.get(),
        }
    }

    /// What moved from `earlier` to `self`.
    fn since(self, earlier: Self) -> Self {
        Self {
            records_in: self.records_in.saturating_sub(earlier.records_in),
            records_out: self.records_out.saturating_sub(earlier.records_out),
            bytes_in: self.bytes_in.saturating_sub(earlier.bytes_in),
            bytes_out: self.bytes_out.saturating_sub(earlier.bytes_out),
        }
    }
}

/// One interval's traffic through both doors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// When the interval ended, in milliseconds since the epoch.
    pub at: i64,
    /// Through the Kafka door.
    pub kafka: DoorCounts,
    /// Through the HTTP door.
    pub http: DoorCounts,
}

/// The last [`WINDOW`] of traffic, one [`Sample`] per [`INTERVAL`].
#[derive(Debug, Default)]
pub struct History {
    samples: Mutex<VecDeque<Sample>>,
}

impl History {
    /// The samples kept, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.lock().iter().copied().collect()
    }

    /// Appends `sample`, dropping what fell out of the window.
    fn push(&self, sample: Sample) {
        let mut samples = self.lock();
        if samples.len() == POINTS {
            samples.pop_front();
        }
        samples.push_back(sample);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Sample>> {
        // The ring holds plain numbers: a panic elsewhere cannot leave it
        // half-written, so a poisoned lock is still good to use.
        self.samples.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Samples the traffic counters every [`INTERVAL`] until `stop`.
    pub async fn sample_until(&self, stop: CancellationToken) {
        let mut tick = tokio::time::interval(INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last = (DoorCounts::now(Door::Kafka), DoorCounts::now(Door::Http));
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let now = (DoorCounts::now(Door::Kafka), DoorCounts::now(Door::Http));
            self.push(Sample {
                at: epoch_ms(),
                kafka: now.0.since(last.0),
                http: now.1.since(last.1),
            });
            last = now;
        }
    }
}

fn epoch_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_window() {
        let history = History::default();
        let counts = |n| DoorCounts {
            records_in: n,
            ..DoorCounts::default()
        };
        for n in 0..(POINTS as u64 + 10) {
            history.push(Sample {
                at: n as i64,
                kafka: counts(n),
                http: DoorCounts::default(),
            });
        }
        let samples = history.samples();
        assert_eq!(samples.len(), POINTS);
        assert_eq!(samples[0].at, 10);
        assert_eq!(samples[POINTS - 1].kafka.records_in, POINTS as u64 + 9);
    }

    #[test]
    fn an_interval_counts_what_moved() {
        let earlier = DoorCounts {
            records_in: 5,
            records_out: 1,
            bytes_in: 50,
            bytes_out: 10,
        };
        let later = DoorCounts {
            records_in: 8,
            records_out: 1,
            bytes_in: 80,
            bytes_out: 12,
        };
        assert_eq!(
            later.since(earlier),
            DoorCounts {
                records_in: 3,
                records_out: 0,
                bytes_in: 30,
                bytes_out: 2
            }
        );
    }
}
