//! The process's own families, read from `/proc` at scrape time:
//! CPU seconds, resident and virtual memory, open descriptors, start time.
//! Named as every Prometheus client names them (`process_*`, without the
//! `queen_` prefix), so that stock dashboards find them.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// Clock ticks per second of `/proc/self/stat`'s times: `sysconf(_SC_CLK_TCK)`
/// is 100 on every Linux architecture Rust targets.
const TICKS_PER_SECOND: f64 = 100.0;

/// What `/proc/self` says about this process.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    cpu_seconds: f64,
    resident_bytes: i64,
    virtual_bytes: i64,
    start_time_seconds: f64,
}

/// Parses `/proc/self/stat` (CPU times, start time in ticks after boot)
/// and `/proc/self/status` (memory, in kB: no page size to guess), with
/// the boot time in seconds since the epoch; `None` when a file does not
/// have the expected shape.
fn parse(stat: &str, status: &str, boot_time: f64) -> Option<Sample> {
    // The command name (field 2) may hold spaces: the fields after it are
    // counted from its closing parenthesis.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Field 3 (state) is fields[0]; utime is field 14, stime 15, starttime 22.
    let ticks = |field: usize| fields.get(field - 3)?.parse::<f64>().ok();
    let cpu_seconds = (ticks(14)? + ticks(15)?) / TICKS_PER_SECOND;
    let start_time_seconds = boot_time + ticks(22)? / TICKS_PER_SECOND;
    let kilobytes = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse::<i64>()
            .ok()
    };
    Some(Sample {
        cpu_seconds,
        resident_bytes: kilobytes("VmRSS:")? * 1024,
        virtual_bytes: kilobytes("VmSize:")? * 1024,
        start_time_seconds,
    })
}

/// The boot time from `/proc/stat`'s `btime` line.
fn boot_time(proc_stat: &str) -> Option<f64> {
    proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// Reads the sample now; `None` off Linux or when `/proc` is unreadable.
fn sample() -> Option<Sample> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let boot = boot_time(&std::fs::read_to_string("/proc/stat").ok()?)?;
    parse(&stat, &status, boot)
}

/// Open file descriptors: the entries of `/proc/self/fd`.
fn open_fds() -> Option<i64> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count() as i64)
}

/// Encodes the process families at each scrape.
#[derive(Debug)]
pub(super) struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(s) = sample() {
            let cpu = ConstCounter::new(s.cpu_seconds);
            cpu.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                cpu.metric_type(),
            )?)?;
            for (name, help, value) in [
                (
                    "process_resident_memory_bytes",
                    "Resident memory size in bytes",
                    s.resident_bytes,
                ),
                (
                    "process_virtual_memory_bytes",
                    "Virtual memory size in bytes",
                    s.virtual_bytes,
                ),
            ] {
                ConstGauge::new(value).encode(encoder.encode_descriptor(
                    name,
                    help,
                    None,
                    MetricType::Gauge,
                )?)?;
            }
            ConstGauge::new(s.start_time_seconds).encode(encoder.encode_descriptor(
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                None,
                MetricType::Gauge,
            )?)?;
        }
        if let Some(fds) = open_fds() {
            ConstGauge::new(fds).encode(encoder.encode_descriptor(
                "process_open_fds",
                "Number of open file descriptors",
                None,
                MetricType::Gauge,
            )?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_and_status_are_parsed_past_a_name_with_spaces() {
        let stat = "4242 (queen (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 150 0 0 20 0 8 0 12345 1000000 500 18446744073709551615";
        let status = "Name:\tqueen\nVmSize:\t   10000 kB\nVmRSS:\t    3200 kB\n";
        let sample = parse(stat, status, 1_700_000_000.0).expect("parsed");
        assert_eq!(
            sample,
            Sample {
                cpu_seconds: 4.0,
                resident_bytes: 3200 * 1024,
                virtual_bytes: 10000 * 1024,
                start_time_seconds: 1_700_000_123.45,
            }
        );
        assert_eq!(parse("garbage", status, 0.0), None);
        assert_eq!(parse(stat, "Name: x\n", 0.0), None);
        assert_eq!(
            boot_time("cpu 1 2\nbtime 1700000000\n"),
            Some(1_700_000_000.0)
        );
    }

    #[test]
    fn this_process_is_sampled() {
        let s = sample().expect("/proc is readable on Linux");
        assert!(s.resident_bytes > 0 && s.virtual_bytes >= s.resident_bytes);
        assert!(s.start_time_seconds > 1_600_000_000.0);
        assert!(open_fds().is_some_and(|n| n > 0));
    }
}
