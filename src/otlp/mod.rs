//! Shipping audit records to a log pipeline: OpenTelemetry logs over OTLP/HTTP (protobuf), read from the
//! export spool in order, in batches, retried with backoff while the collector is unreachable, and the spool's
//! cursor moved only once the collector has answered 2xx: nothing is lost within the spool's bound, and a line
//! is sent again only if cordon stopped between sending and moving the cursor (`cordon.seq` de-duplicates).
//!
//! The exporter runs on a thread of its own with its own small runtime, so neither a slow collector nor the
//! spool's file reads touch the threads that serve requests; it is stopped after the audit writer, so the last
//! lines cordon writes are in the spool for the next start if it cannot send them before it ends.

mod encode;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::Full;
use prost::Message;
use secrecy::ExposeSecret;

use crate::audit::spool::{Spool, SpoolReader};
use crate::config::OtlpExport;
use crate::metrics::Metrics;
use crate::secrets::Secrets;
use crate::upstream::outbound::HttpClient;

/// The waits after failed exports: 250 ms doubling to [`BACKOFF_MAX`], each stretched by up to as much again at
/// random, so replicas that lost the same collector do not all come back at once.
const BACKOFF: backon::ExponentialBuilder = backon::ExponentialBuilder::new()
    .with_min_delay(Duration::from_millis(250))
    .with_max_delay(BACKOFF_MAX)
    .with_jitter()
    .without_max_times();
/// The longest wait before jitter, and the longest `Retry-After` of the collector's that is followed.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How long cordon, stopping, goes on sending what waits.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// The running exporter: stops (after sending what it can within a moment) when dropped.
#[must_use = "dropping it stops the exporter"]
pub(crate) struct Exporter {
    stop: tokio_util::sync::CancellationToken,
    done: std::sync::mpsc::Receiver<()>,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.cancel();
        if self.done.recv_timeout(STOP_WAIT + Duration::from_secs(1)).is_err() {
            tracing::warn!("the audit exporter did not finish in time; what it had not sent waits in its spool");
        }
    }
}

/// What one export attempt came to.
enum Sent {
    /// The collector has them (`rejected` of them it said it refused).
    Taken { rejected: i64 },
    /// The collector refuses the request as malformed or too large: send fewer, or give up on a lone line.
    Refused(String),
    /// Try again later (after `after`, if the collector said).
    Failed(String, Option<Duration>),
}

/// Start exporting the lines of `spool` as `config` says; header secrets are read now.
pub(crate) async fn start(
    config: &OtlpExport,
    spool: Arc<Spool>,
    secrets: &Secrets,
    metrics: Arc<Metrics>,
) -> Result<Exporter, String> {
    let mut headers = Vec::new();
    for (name, r) in &config.headers {
        let secret = secrets
            .stored(r)
            .await
            .map_err(|e| format!("audit.export.otlp.headers.{name}: {e}"))?;
        let value = http::HeaderValue::from_str(secret.expose_secret())
            .map_err(|_| format!("audit.export.otlp.headers.{name}: the secret is not a valid header value"))?;
        headers.push((name.clone(), value));
    }
    let client = HttpClient::new(&config.roots)?;
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown".into());
    let sender = encode::Sender::new(config.instance.as_deref().unwrap_or(&host), &host);
    let stop = tokio_util::sync::CancellationToken::new();
    let (done_tx, done) = std::sync::mpsc::channel();
    let job = Job {
        config: config.clone(),
        headers,
        client,
        sender,
        spool,
        metrics,
        stop: stop.clone(),
    };
    std::thread::Builder::new()
        .name("cordon-audit-export".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt.block_on(job.run()),
                Err(e) => tracing::error!("cannot start the audit exporter's runtime: {e}"),
            }
            let _ = done_tx.send(());
        })
        .map_err(|e| format!("cannot start the audit exporter: {e}"))?;
    tracing::info!(endpoint = %config.endpoint, spool = %config.spool.display(), "audit records are exported (OTLP/HTTP)");
    Ok(Exporter { stop, done })
}

struct Job {
    config: OtlpExport,
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    client: HttpClient,
    sender: encode::Sender,
    spool: Arc<Spool>,
    metrics: Arc<Metrics>,
    stop: tokio_util::sync::CancellationToken,
}

impl Job {
    async fn run(self) {
        let mut reader = SpoolReader::new(self.spool.clone());
        let mut backoff = backon::BackoffBuilder::build(&BACKOFF);
        let mut size = self.config.batch;
        let mut last_send = Instant::now() - self.config.interval;
        let mut stop_by = None;
        let mut down_since: Option<Instant> = None;
        loop {
            if self.stop.is_cancelled() && stop_by.is_none() {
                stop_by = Some(Instant::now() + STOP_WAIT);
            }
            if stop_by.is_some_and(|by| Instant::now() >= by) {
                return;
            }
            self.metrics
                .audit
                .set_export(self.spool.backlog(), self.spool.dropped_bytes());
            let batch = match reader.read(size) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!("cannot read the audit export spool: {e}");
                    self.pause(Duration::from_secs(1)).await;
                    continue;
                }
            };
            if batch.lines.is_empty() {
                if stop_by.is_some() {
                    return;
                }
                tokio::select! {
                    () = self.spool.wake.notified() => {}
                    () = tokio::time::sleep(self.config.interval) => {}
                    () = self.stop.cancelled() => {}
                }
                continue;
            }
            // A batch not yet full waits for the interval since the last send (unless cordon is stopping).
            let due = last_send + self.config.interval;
            if batch.lines.len() < size && stop_by.is_none() && Instant::now() < due {
                self.pause(due - Instant::now()).await;
                continue;
            }
            last_send = Instant::now();
            let n = batch.lines.len();
            // A collector that takes the connection and never answers must not hold cordon's stop up to the
            // timeout: once stopping, a send gets what is left of the stop's wait (its lines stay in the spool).
            let stopped = async {
                self.stop.cancelled().await;
                tokio::time::sleep(STOP_WAIT).await;
            };
            let sent = tokio::select! {
                sent = self.send(&batch.lines) => sent,
                () = stopped => Sent::Failed("cordon stopped while the collector had not answered".into(), None),
            };
            match sent {
                Sent::Taken { rejected } => {
                    if let Err(e) = reader.commit(batch.end) {
                        tracing::warn!("cannot move the audit export spool's cursor: {e}");
                    }
                    if let Some(since) = down_since.take() {
                        tracing::info!(
                            "the audit collector takes records again (it was unreachable for {:.1?})",
                            since.elapsed()
                        );
                    }
                    let rejected = u64::try_from(rejected).unwrap_or(0);
                    self.metrics.audit.exported(n as u64 - rejected.min(n as u64), rejected);
                    backoff = backon::BackoffBuilder::build(&BACKOFF);
                    size = (size * 2).min(self.config.batch);
                }
                Sent::Refused(why) if n > 1 => {
                    tracing::warn!("the audit collector refused {n} records ({why}); sending fewer at a time");
                    size = n / 2;
                }
                Sent::Refused(why) => {
                    tracing::error!(
                        "the audit collector refused a record ({why}); it is skipped (it stays in the audit file)"
                    );
                    if let Err(e) = reader.commit(batch.end) {
                        tracing::warn!("cannot move the audit export spool's cursor: {e}");
                    }
                    self.metrics.audit.exported(0, 1);
                }
                Sent::Failed(why, after) => {
                    if down_since.is_none() {
                        tracing::warn!(
                            "cannot export audit records ({why}); they wait in the spool and are sent when the collector \
                             answers"
                        );
                        down_since = Some(Instant::now());
                    }
                    self.metrics.audit.export_failed();
                    if stop_by.is_some() || self.stop.is_cancelled() {
                        return;
                    }
                    let wait = backoff.next().unwrap_or(BACKOFF_MAX);
                    self.pause(after.map_or(wait, |after| after.min(BACKOFF_MAX))).await;
                }
            }
        }
    }

    /// Wait `d`, or less if cordon is stopping.
    async fn pause(&self, d: Duration) {
        tokio::select! {
            () = tokio::time::sleep(d) => {}
            () = self.stop.cancelled() => {}
        }
    }

    async fn send(&self, lines: &[Vec<u8>]) -> Sent {
        let body = encode::request(&self.sender, lines);
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(self.config.endpoint.clone())
            .header(header::CONTENT_TYPE, "application/x-protobuf");
        for (name, value) in &self.headers {
            req = req.header(name, value);
        }
        let req = match req.body(Full::new(Bytes::from(body))) {
            Ok(r) => r,
            Err(e) => return Sent::Failed(e.to_string(), None),
        };
        let (status, headers, body) = match self.client.send(req, self.config.timeout).await {
            Ok(answer) => answer,
            Err(e) => return Sent::Failed(e.to_string(), None),
        };
        if status.is_success() {
            use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
            let rejected = ExportLogsServiceResponse::decode(body)
                .ok()
                .and_then(|r| r.partial_success)
                .map_or(0, |p| {
                    if p.rejected_log_records > 0 {
                        tracing::warn!(
                            "the audit collector rejected {} record(s): {}",
                            p.rejected_log_records,
                            p.error_message
                        );
                    }
                    p.rejected_log_records
                });
            return Sent::Taken { rejected };
        }
        let why = format!("{} answered {status}", self.config.endpoint);
        match status {
            StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => Sent::Refused(why),
            _ => {
                let after = headers
                    .get(header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                Sent::Failed(why, after)
            }
        }
    }
}
