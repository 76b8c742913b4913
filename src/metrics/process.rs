//! The standard process metrics (`process_*`, as Prometheus client libraries name them), read from /proc at
//! each scrape, and `cordon_build_info`, the build as labels (see [`crate::version`]).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::{Registry, Unit};

use crate::version;

/// Registers `cordon_build_info` and the process collector.
pub(super) fn register(registry: &mut Registry) {
    let info = Family::<[(&'static str, &'static str); 3], Gauge>::default();
    info.get_or_create(&[
        ("version", version::VERSION),
        ("commit", version::COMMIT),
        ("rustc", version::RUSTC),
    ])
    .set(1);
    registry.register(
        "cordon_build_info",
        "Always 1; the labels say which build this is: version, git commit (unknown without git), rustc",
        info,
    );
    registry.register_collector(Box::new(ProcessCollector));
}

/// Reads this process's figures from /proc when scraped. A figure that cannot be read is left out of that
/// scrape rather than reported wrong.
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Ok(me) = procfs::process::Process::myself() else {
            return Ok(());
        };
        if let Ok(stat) = me.stat() {
            let ticks = procfs::ticks_per_second() as f64;
            let cpu = ConstCounter::new((stat.utime + stat.stime) as f64 / ticks);
            let m = encoder.encode_descriptor(
                "process_cpu",
                "Total user and system CPU time spent, in seconds",
                Some(&Unit::Seconds),
                cpu.metric_type(),
            )?;
            cpu.encode(m)?;
            let rss = ConstGauge::new(stat.rss as i64 * procfs::page_size() as i64);
            let m = encoder.encode_descriptor(
                "process_resident_memory",
                "Resident memory size, in bytes",
                Some(&Unit::Bytes),
                rss.metric_type(),
            )?;
            rss.encode(m)?;
            if let Ok(boot) = procfs::boot_time_secs() {
                let start = ConstGauge::new(boot as f64 + stat.starttime as f64 / ticks);
                let m = encoder.encode_descriptor(
                    "process_start_time",
                    "When the process started, in seconds since the Unix epoch",
                    Some(&Unit::Seconds),
                    start.metric_type(),
                )?;
                start.encode(m)?;
            }
        }
        if let Ok(fds) = me.fd_count() {
            let open = ConstGauge::new(fds as i64);
            let m = encoder.encode_descriptor("process_open_fds", "Open file descriptors", None, open.metric_type())?;
            open.encode(m)?;
        }
        if let Ok(limits) = me.limits()
            && let procfs::process::LimitValue::Value(max) = limits.max_open_files.soft_limit
        {
            let max = ConstGauge::new(max as i64);
            let m = encoder.encode_descriptor(
                "process_max_fds",
                "The most file descriptors the process may open (its soft limit)",
                None,
                max.metric_type(),
            )?;
            max.encode(m)?;
        }
        Ok(())
    }
}
