//! A split-block Bloom filter over transaction-id hashes: the in-memory
//! "no" or "maybe" in front of each sealed run of the dedup index.
//!
//! Each key sets 8 bits in one 256-bit block (one cache line), so a probe
//! costs a single memory access. Blocks are chosen by multiply-shift on the
//! hash's high half, which lets a filter be folded: OR-ing blocks `2i` and
//! `2i + 1` gives the filter that the same keys would have built with half
//! the blocks. Folding is how a partition gives memory back when the dedup
//! budget is tight: the filter keeps saying "no" to most absent keys, only
//! less often, and never "no" to a present one.

use super::bits::Bits;

/// The multipliers that pick a key's bit in each word of its block.
const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// Block counts are a multiple of this, so every filter can be folded at
/// least four times.
const BLOCK_GRAIN: usize = 16;

/// Bytes per block: eight 32-bit words.
const BLOCK_BYTES: usize = 32;

/// A split-block Bloom filter, kept in its stored form (little-endian
/// words) so storing one copies nothing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Filter {
    bytes: Bits,
}

impl Filter {
    /// An empty filter sized for `keys` keys at about `bits_per_key` bits each.
    pub(crate) fn with_capacity(keys: usize, bits_per_key: usize) -> Self {
        let blocks = (keys.saturating_mul(bits_per_key) / 256).max(1);
        let blocks = blocks.div_ceil(BLOCK_GRAIN) * BLOCK_GRAIN;
        Self {
            bytes: Bits::zeroed(blocks * BLOCK_BYTES),
        }
    }

    /// Adds a key.
    pub(crate) fn insert(&mut self, hash: i64) {
        let block = self.block_of(hash);
        for (word, bit) in block_words_mut(&mut self.bytes[block]).zip(mask(hash)) {
            let value = u32::from_le_bytes([word[0], word[1], word[2], word[3]]) | bit;
            word.copy_from_slice(&value.to_le_bytes());
        }
    }

    /// False only if `hash` was never inserted.
    pub(crate) fn may_contain(&self, hash: i64) -> bool {
        let block = &self.bytes[self.block_of(hash)];
        // All eight words are tested without stopping at the first miss:
        // in a filter about half full, where that first miss falls is a coin
        // toss the CPU mispredicts, and each misprediction also throws away
        // the memory loads of the next probes already under way. The one
        // branch left (any miss at all) is nearly always taken.
        let missing = block
            .chunks_exact(4)
            .zip(mask(hash))
            .fold(0, |acc, (w, bit)| {
                acc | (!u32::from_le_bytes([w[0], w[1], w[2], w[3]]) & bit)
            });
        missing == 0
    }

    /// The filter halved (see the module doc); `None` when it can no longer
    /// be folded. A new filter rather than this one changed, because a
    /// lookup outside the append lock may be probing this one.
    pub(crate) fn folded(&self) -> Option<Self> {
        let blocks = self.blocks();
        if blocks < 2 || !blocks.is_multiple_of(2) {
            return None;
        }
        let folded = self
            .bytes
            .chunks_exact(2 * BLOCK_BYTES)
            .flat_map(|pair| {
                let (a, b) = pair.split_at(BLOCK_BYTES);
                a.iter().zip(b).map(|(x, y)| x | y).collect::<Vec<u8>>()
            })
            .collect();
        Some(Self {
            bytes: Bits::from_vec(folded),
        })
    }

    /// The memory it holds, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The stored form.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Takes the stored form; `None` if it is not whole blocks.
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> Option<Self> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(BLOCK_BYTES) {
            return None;
        }
        Some(Self {
            bytes: Bits::from_vec(bytes),
        })
    }

    fn blocks(&self) -> usize {
        self.bytes.len() / BLOCK_BYTES
    }

    /// The byte range of the block `hash` falls in.
    fn block_of(&self, hash: i64) -> std::ops::Range<usize> {
        // Multiply-shift on the high half: uniform, and halving the block
        // count halves the index (floor(floor(x)/2) = floor(x/2)).
        let i = (((hash as u64) >> 32).wrapping_mul(self.blocks() as u64) >> 32) as usize;
        i * BLOCK_BYTES..(i + 1) * BLOCK_BYTES
    }
}

/// The four-byte words of a block.
fn block_words_mut(block: &mut [u8]) -> impl Iterator<Item = &mut [u8]> {
    block.chunks_exact_mut(4)
}

/// The bit each word of the block gets for `hash` (from its low half).
fn mask(hash: i64) -> [u32; 8] {
    let low = hash as u32;
    std::array::from_fn(|i| 1 << (low.wrapping_mul(SALT[i]) >> 27))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(seed: u64, n: usize) -> impl Iterator<Item = i64> {
        (0..n as u64)
            .map(move |i| xxhash_rust::xxh3::xxh3_64(&(seed << 40 | i).to_le_bytes()) as i64)
    }

    fn false_positive_rate(filter: &Filter) -> f64 {
        let probes = 200_000;
        let hits = keys(99, probes).filter(|&h| filter.may_contain(h)).count();
        hits as f64 / probes as f64
    }

    #[test]
    fn never_says_no_to_a_key_it_holds_and_rarely_yes_to_others() {
        let n = 100_000;
        let mut filter = Filter::with_capacity(n, 12);
        for h in keys(1, n) {
            filter.insert(h);
        }
        assert!(keys(1, n).all(|h| filter.may_contain(h)));
        let rate = false_positive_rate(&filter);
        assert!(rate < 0.01, "false positive rate {rate}");
    }

    #[test]
    fn folding_keeps_every_key_and_halves_the_memory() {
        let n = 50_000;
        let mut filter = Filter::with_capacity(n, 16);
        for h in keys(2, n) {
            filter.insert(h);
        }
        let before = (filter.bytes(), false_positive_rate(&filter));
        let filter = filter.folded().expect("foldable");
        assert_eq!(filter.bytes() * 2, before.0);
        assert!(
            keys(2, n).all(|h| filter.may_contain(h)),
            "a folded filter lost a key"
        );
        let after = false_positive_rate(&filter);
        assert!(after > before.1 && after < 0.2, "{before:?} -> {after}");
    }

    #[test]
    fn the_stored_form_round_trips() {
        let mut filter = Filter::with_capacity(1_000, 12);
        for h in keys(3, 1_000) {
            filter.insert(h);
        }
        assert_eq!(Filter::from_bytes(filter.as_bytes().to_vec()), Some(filter));
        assert_eq!(Filter::from_bytes(vec![0; 33]), None);
        assert_eq!(Filter::from_bytes(Vec::new()), None);
    }
}
