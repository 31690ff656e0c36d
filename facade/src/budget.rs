//! The in-flight budget: the memory Kafka requests may hold from read to
//! answered, across connections, counted in KiB by semaphores.
//!
//! Waiting is first come, first served, so no request starves; but a small
//! request queued behind a large one waits for the large one's room, and
//! while a bulk producer runs its next megabyte batch is nearly always
//! queued: a stream of small requests (a producer with little or no
//! linger, a consumer's fetch of a few records) then goes at the pace of
//! another client's commits. So a reserve of the budget is kept for small
//! requests: one takes its room there when it can at once, and otherwise
//! waits in the common queue like any other. The total stays the bound.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The reserve's share of the budget: an eighth.
const RESERVE_DIVISOR: usize = 8;

/// A small request needs at most this share of the reserve: a sixteenth,
/// so sixteen of them fit in it at once.
const SMALL_DIVISOR: usize = 16;

/// The in-flight budget.
#[derive(Debug)]
pub(crate) struct Budget {
    /// Room for every request, waited for in order.
    shared: Arc<Semaphore>,
    /// Room only small requests take, and only when it is free at once.
    reserve: Arc<Semaphore>,
    shared_kib: usize,
    small_kib: usize,
}

impl Budget {
    /// A budget of `bytes` (at least 1 KiB).
    pub(crate) fn new(bytes: usize) -> Self {
        // In KiB, and no more than one acquisition can ask for (a u32).
        let total_kib = bytes
            .div_ceil(1024)
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        let reserve_kib = total_kib / RESERVE_DIVISOR;
        let shared_kib = total_kib - reserve_kib;
        Self {
            shared: Arc::new(Semaphore::new(shared_kib)),
            reserve: Arc::new(Semaphore::new(reserve_kib)),
            shared_kib,
            small_kib: reserve_kib / SMALL_DIVISOR,
        }
    }

    /// The room a request may wait for at most: a request larger than it
    /// waits for all of it.
    pub(crate) fn largest(&self) -> usize {
        self.shared_kib * 1024
    }

    /// Waits until `bytes` fit; the permit returns the room when dropped.
    pub(crate) async fn acquire(&self, bytes: usize) -> OwnedSemaphorePermit {
        let kib = bytes.div_ceil(1024).min(self.shared_kib);
        // Never saturates: the budget fits in a u32 (see `new`).
        let kib32 = u32::try_from(kib).unwrap_or(u32::MAX);
        if kib <= self.small_kib {
            if let Some(permit) = self.try_reserve(kib32) {
                return permit;
            }
        }
        // The semaphores are never closed, so acquiring only waits.
        match self.shared.clone().acquire_many_owned(kib32).await {
            Ok(permit) => permit,
            Err(_) => unreachable_closed(),
        }
    }

    /// The largest room a small request takes from the reserve, if it is
    /// free at once: the permit and its bytes. `None` when it is not (or
    /// the budget is too small to keep a reserve).
    pub(crate) fn try_small(&self) -> Option<(OwnedSemaphorePermit, usize)> {
        let kib = u32::try_from(self.small_kib).ok().filter(|&k| k > 0)?;
        Some((self.try_reserve(kib)?, self.small_kib * 1024))
    }

    /// `kib` of the reserve, if free at once.
    fn try_reserve(&self, kib: u32) -> Option<OwnedSemaphorePermit> {
        self.reserve.clone().try_acquire_many_owned(kib).ok()
    }
}

#[cold]
fn unreachable_closed() -> ! {
    panic!("the in-flight semaphore is never closed")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_small_request_is_not_queued_behind_a_large_one() {
        let budget = Budget::new(16 << 20);
        let bulk = budget.acquire(budget.largest()).await;
        // A large request queues for room the bulk request holds.
        let mut large = Box::pin(budget.acquire(3 << 20));
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut large)
            .await
            .is_err());
        // A small one is served from the reserve at once.
        let small = tokio::time::timeout(Duration::from_millis(50), budget.acquire(4096))
            .await
            .expect("a small request is admitted while a large one waits");
        drop(small);
        drop(bulk);
        let _admitted = tokio::time::timeout(Duration::from_secs(1), large)
            .await
            .expect("the large request is admitted once the room returns");
    }

    #[tokio::test]
    async fn a_small_room_is_had_at_once_or_not_at_all() {
        let budget = Budget::new(16 << 20);
        let _bulk = budget.acquire(budget.largest()).await;
        let rooms: Vec<_> = std::iter::from_fn(|| budget.try_small())
            .take(100)
            .collect();
        assert_eq!(rooms.len(), 16, "the reserve holds sixteen small rooms");
        assert!(rooms
            .iter()
            .all(|(_, bytes)| *bytes == budget.small_kib * 1024));
        drop(rooms);
        assert!(
            budget.try_small().is_some(),
            "the rooms return when dropped"
        );
        assert!(
            Budget::new(4096).try_small().is_none(),
            "no reserve, no room"
        );
    }

    #[tokio::test]
    async fn the_reserve_is_bounded_and_then_small_requests_wait_in_turn() {
        let budget = Budget::new(16 << 20);
        let bulk = budget.acquire(budget.largest()).await;
        // The reserve (2 MiB) holds sixteen of the largest small requests.
        let small = budget.small_kib * 1024;
        let mut held = Vec::new();
        for _ in 0..SMALL_DIVISOR {
            held.push(
                tokio::time::timeout(Duration::from_millis(50), budget.acquire(small))
                    .await
                    .expect("room in the reserve"),
            );
        }
        let mut next = Box::pin(budget.acquire(small));
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut next)
            .await
            .is_err());
        // A request just over the small size never takes the reserve.
        drop(held.pop());
        let mut over = Box::pin(budget.acquire(small + 1024));
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut over)
            .await
            .is_err());
        drop(bulk);
        let _admitted = tokio::time::timeout(Duration::from_secs(1), next)
            .await
            .expect("admitted from the shared room");
    }
}
