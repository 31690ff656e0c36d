//! Deterministic pseudo-random input for the decoders' robustness tests.

/// An xorshift64 generator seeded with `seed` (non-zero): cheap, and the
/// same sequence on every run, so a failure replays.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
