//! Waking long polls: a [`Notify`] per queue on this broker, and on
//! PostgreSQL a `NOTIFY` on [`CHANNEL`] that the other brokers `LISTEN` to.
//!
//! A waiting pop takes its queue's notifier and arms it *before* it tries
//! to pop, so a push that lands between the empty attempt and the wait is
//! not missed. Announcements to other brokers are coalesced: one task sends
//! every queue named since its last round in a single statement.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, Notify};

/// The PostgreSQL channel brokers announce new work on; the payload is the
/// queue name.
pub(crate) const CHANNEL: &str = "queen_wake";

/// Past this many notifiers, those nobody waits on are dropped.
const SWEEP_AT: usize = 1024;

/// The notifiers by queue.
#[derive(Debug, Default)]
struct Notifiers {
    by_queue: HashMap<String, Arc<Notify>>,
    /// Adding a queue at this many notifiers first drops those nobody
    /// waits on; then it is twice what is left (at least [`SWEEP_AT`]), so
    /// a sweep is paid for by as many additions, however many queues have
    /// waiters.
    sweep_at: usize,
}

/// The wake-ups of one engine.
#[derive(Debug)]
pub(crate) struct Wake {
    queues: Mutex<Notifiers>,
    /// Notified on every announcement: for pops that span queues.
    any: Arc<Notify>,
    /// Queues to announce to other brokers, and the kick of the task that
    /// does it; `None` on an embedded (SQLite) engine.
    remote: Option<(Mutex<HashSet<String>>, mpsc::Sender<()>)>,
}

impl Wake {
    /// Wake-ups for this broker only.
    pub(crate) fn local() -> Arc<Self> {
        Arc::new(Self {
            queues: Mutex::default(),
            any: Arc::new(Notify::new()),
            remote: None,
        })
    }

    /// Wake-ups that are also sent to other brokers: the receiver yields a
    /// unit whenever [`Wake::take_outbox`] has queues to send.
    pub(crate) fn shared() -> (Arc<Self>, mpsc::Receiver<()>) {
        let (kick, rx) = mpsc::channel(1);
        let wake = Arc::new(Self {
            queues: Mutex::default(),
            any: Arc::new(Notify::new()),
            remote: Some((Mutex::new(HashSet::new()), kick)),
        });
        (wake, rx)
    }

    /// The notifier of `queue`, for a pop or a fetch about to wait on it.
    pub(crate) fn subscribe(&self, queue: &str) -> Arc<Notify> {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(notify) = queues.by_queue.get(queue) {
            return notify.clone();
        }
        if queues.by_queue.len() >= queues.sweep_at.max(SWEEP_AT) {
            queues.by_queue.retain(|_, n| Arc::strong_count(n) > 1);
            queues.sweep_at = 2 * queues.by_queue.len();
        }
        let notify = Arc::new(Notify::new());
        queues.by_queue.insert(queue.to_owned(), notify.clone());
        notify
    }

    /// The notifier of every announcement, for pops spanning queues.
    pub(crate) fn any(&self) -> Arc<Notify> {
        self.any.clone()
    }

    /// Wakes the pops waiting on `queue` here and on the other brokers.
    pub(crate) fn announce(&self, queue: &str) {
        self.wake_local(queue);
        if let Some((outbox, kick)) = &self.remote {
            outbox
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(queue.to_owned());
            // A full channel means a round is already due: it will take this queue too.
            let _ = kick.try_send(());
        }
    }

    /// Wakes the pops waiting on `queue` on this broker.
    pub(crate) fn wake_local(&self, queue: &str) {
        let notify = self
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_queue
            .get(queue)
            .cloned();
        if let Some(n) = notify {
            n.notify_waiters();
        }
        self.any.notify_waiters();
    }

    /// Wakes every waiting pop on this broker: after announcements may have
    /// been lost (the listening connection dropped).
    pub(crate) fn wake_all_local(&self) {
        let all: Vec<Arc<Notify>> = self
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_queue
            .values()
            .cloned()
            .collect();
        for n in all {
            n.notify_waiters();
        }
        self.any.notify_waiters();
    }

    /// The queues announced since the last call, for the other brokers.
    pub(crate) fn take_outbox(&self) -> Vec<String> {
        match &self.remote {
            Some((outbox, _)) => outbox
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain()
                .collect(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_armed_waiter_sees_an_announcement_made_before_it_waits() {
        let wake = Wake::local();
        let notify = wake.subscribe("q");
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        wake.announce("q");
        tokio::time::timeout(std::time::Duration::from_secs(1), notified)
            .await
            .expect("woken");
    }

    #[test]
    fn notifiers_nobody_waits_on_are_dropped_and_a_held_one_is_kept() {
        let wake = Wake::local();
        let held = wake.subscribe("held");
        for i in 0..3 * SWEEP_AT {
            drop(wake.subscribe(&format!("q{i}")));
        }
        let queues = wake.queues.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(
            queues.by_queue.len() <= SWEEP_AT,
            "{} notifiers kept",
            queues.by_queue.len()
        );
        drop(queues);
        assert!(Arc::ptr_eq(&held, &wake.subscribe("held")));
    }

    #[tokio::test]
    async fn announcements_to_other_brokers_are_coalesced() {
        let (wake, mut rx) = Wake::shared();
        wake.announce("a");
        wake.announce("b");
        wake.announce("a");
        rx.recv().await.expect("kicked");
        let mut sent = wake.take_outbox();
        sent.sort();
        assert_eq!(sent, ["a", "b"]);
        assert!(wake.take_outbox().is_empty());
    }
}
