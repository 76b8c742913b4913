//! Operating cordon: build info, JSON logs, metrics that agree with the audit, the shipped alerts and dashboard,
//! readiness and sd_notify.

mod build_info;
mod log_format;
mod metric_decisions;
mod monitoring;
mod readiness;
mod systemd_notify;
