//! Message ids: UUIDv7 (RFC 9562), minted a batch at a time.
//!
//! A Kafka batch of 10,000 records needs 10,000 ids, and reading the clock
//! and the random generator for each one was ~8% of the broker's CPU while
//! producing. So a batch reads both once: its ids share one millisecond and
//! take consecutive values of a 42-bit counter (RFC 9562, method 1: the
//! counter fills `rand_a` and the top of `rand_b`), which keeps every id this
//! process mints in mint order. The counter starts at a random point in each
//! new millisecond and the last 32 bits are random, so brokers minting in the
//! same millisecond do not collide.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use uuid::Uuid;

const COUNTER_BITS: u32 = 42;
const COUNTER_LIMIT: u64 = 1 << COUNTER_BITS;

/// The last millisecond minted in and the next counter value in it.
static LAST: Mutex<(u64, u64)> = Mutex::new((0, 0));

/// Mints `n` new message ids, in increasing order, after every id minted
/// before by this process.
pub fn new_message_ids(n: usize) -> impl Iterator<Item = Uuid> {
    let random = Uuid::new_v4().as_u128();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let (ms, first) = {
        let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        reserve(
            &mut last,
            now,
            n as u64,
            random as u64 % (COUNTER_LIMIT / 2),
        )
    };
    let seed = (random >> 64) as u64;
    (0..n as u64).map(move |i| compose(ms, first + i, mix(seed.wrapping_add(i)) as u32))
}

/// Mints one new message id.
pub fn new_message_id() -> Uuid {
    new_message_ids(1).next().unwrap_or_else(Uuid::now_v7)
}

/// Takes `n` consecutive counter values at or after `now_ms`: the
/// millisecond and the first value. A clock that went back keeps the last
/// millisecond; a counter that would run out moves on to the next one.
fn reserve(last: &mut (u64, u64), now_ms: u64, n: u64, fresh_start: u64) -> (u64, u64) {
    let (mut ms, mut next) = *last;
    if now_ms > ms {
        (ms, next) = (now_ms, fresh_start);
    }
    if next + n > COUNTER_LIMIT {
        (ms, next) = (ms + 1, fresh_start);
    }
    *last = (ms, next + n);
    (ms, next)
}

/// Lays out a UUIDv7: 48 bits of milliseconds, the version, the counter's
/// top 12 bits, the variant, its low 30 bits, then 32 random bits.
fn compose(ms: u64, counter: u64, random: u32) -> Uuid {
    let ms = u128::from(ms & ((1 << 48) - 1));
    let counter = u128::from(counter & (COUNTER_LIMIT - 1));
    Uuid::from_u128(
        ms << 80
            | 0x7 << 76
            | (counter >> 30) << 64
            | 0b10 << 62
            | (counter & ((1 << 30) - 1)) << 32
            | u128::from(random),
    )
}

/// SplitMix64: spreads a seed and an index over 64 well-mixed bits.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_version_7_and_increase_across_batches() {
        let mut previous = Uuid::nil();
        for n in [1, 5_000, 1, 20_000, 3] {
            for id in new_message_ids(n) {
                assert_eq!(id.get_version_num(), 7);
                assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
                assert!(id > previous, "{id} after {previous}");
                previous = id;
            }
        }
    }

    #[test]
    fn ids_carry_the_minting_millisecond() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let id = new_message_id();
        let (secs, nanos) = id.get_timestamp().expect("v7 timestamp").to_unix();
        let minted = u128::from(secs) * 1000 + u128::from(nanos / 1_000_000);
        assert!(
            minted >= before.as_millis(),
            "{minted} < {}",
            before.as_millis()
        );
    }

    #[test]
    fn a_clock_that_goes_back_keeps_the_order_and_a_full_counter_moves_on() {
        let mut last = (0, 0);
        assert_eq!(reserve(&mut last, 1_000, 4, 100), (1_000, 100));
        assert_eq!(
            reserve(&mut last, 1_000, 4, 9),
            (1_000, 104),
            "same ms: the counter goes on"
        );
        assert_eq!(
            reserve(&mut last, 5, 4, 7),
            (1_000, 108),
            "an earlier clock keeps the last ms"
        );
        assert_eq!(
            reserve(&mut last, 5, COUNTER_LIMIT - 50, 7),
            (1_001, 7),
            "a full counter moves to the next ms"
        );
        assert_eq!(
            reserve(&mut last, 2_000, 1, 3),
            (2_000, 3),
            "a new ms starts afresh"
        );
    }
}
