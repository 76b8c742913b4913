//! Operating cordon: build info, JSON logs, metrics that agree with the audit, the shipped alerts and dashboard,
//! readiness and sd_notify.

mod build_info;
mod log_format;
mod metric_decisions;
mod monitoring;
mod readiness;
mod systemd_notify;

/// A cordon started on a bare configuration (a proxy and an admin listener on loopback, an audit file, a CA
/// folder), and the text of its /metrics: its folder, its process (the caller stops it) and the text.
async fn bare_metrics() -> (tempfile::TempDir, std::process::Child, String) {
    use crate::rigs::ports::free_port;
    let dir = tempfile::tempdir().unwrap();
    let (proxy, admin_port) = (free_port(), free_port());
    let config = dir.path().join("cordon.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: {{ proxy: \"127.0.0.1:{proxy}\", admin: \"127.0.0.1:{admin_port}\" }}\n\
             audit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n\
             control: {{ admin_token: {{ file: {d}/admin-token }} }}\n",
            d = dir.path().display()
        ),
    )
    .unwrap();
    let child = crate::rigs::process::spawn_cordon(&config, proxy, &[]).await;
    let admin = std::net::SocketAddr::from(([127, 0, 0, 1], admin_port));
    let (status, _, text) = crate::rigs::control::admin_request(admin, "GET", "/metrics", None, "").await;
    assert_eq!(status, 200);
    (dir, child, text)
}
