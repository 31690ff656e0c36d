//! Bucket bounds, chosen once so that dashboards can compare histograms.

/// Latencies in seconds, from half a millisecond (a group commit on a fast
/// disk) to half a minute (the longest long poll).
pub const SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Counts of records (or jobs): one to a full group commit (50,000).
pub const RECORDS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 50.0, 100.0, 500.0, 1_000.0, 5_000.0, 10_000.0, 50_000.0,
];

/// Sizes in bytes, from 256 B to 16 MiB (the default `max.message.bytes`).
pub const BYTES: &[f64] = &[
    256.0,
    1_024.0,
    4_096.0,
    16_384.0,
    65_536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
];
