//! Hot reload: on SIGHUP, on a change of the configuration file, and on `POST /v1/reload`. The new file is
//! parsed and validated in full and its generation built before anything is swapped; if any of that fails
//! the running configuration stays, and the errors go to the log and to whoever asked.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::StatusCode;
use sha2::{Digest, Sha256};

use crate::config::{Config, ConfigErrors};
use crate::state::ProxyState;

/// What asked for a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReloadTrigger {
    /// SIGHUP.
    Signal,
    /// The file changed.
    File,
    /// `POST /v1/reload`.
    Api,
}

impl ReloadTrigger {
    fn code(self) -> &'static str {
        match self {
            ReloadTrigger::Signal => "signal",
            ReloadTrigger::File => "file",
            ReloadTrigger::Api => "api",
        }
    }
}

/// A reload that took.
#[derive(Debug)]
pub(crate) struct Reloaded {
    /// The generation now in force.
    pub(crate) generation: u64,
    /// The file it came from.
    pub(crate) source: String,
}

/// Why a reload did not take; the running configuration stays.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReloadError {
    /// cordon runs on its embedded configuration.
    #[error("cordon runs on its embedded configuration; start it with --config FILE to reload")]
    NoFile,
    /// The file cannot be read (or is gone).
    #[error("{0}; the running configuration stays")]
    Read(String),
    /// The file is empty (or only white space and comments): most likely caught half-written.
    #[error("{0} is empty; the running configuration stays ({hint})", hint = crate::config::BLANK_HINT)]
    Empty(String),
    /// The file is not a valid configuration.
    #[error("the new configuration is invalid; the running one stays")]
    Invalid(ConfigErrors),
    /// Valid, but not applicable while running.
    #[error("the new configuration cannot be applied while cordon runs; the running one stays")]
    Refused(Vec<String>),
}

impl ReloadError {
    /// Stable code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            ReloadError::NoFile => "no_config_file",
            ReloadError::Read(_) => "unreadable_config",
            ReloadError::Empty(_) => "empty_config",
            ReloadError::Invalid(_) => "invalid_config",
            ReloadError::Refused(_) => "reload_refused",
        }
    }

    /// HTTP status for the admin API.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ReloadError::NoFile => StatusCode::CONFLICT,
            ReloadError::Read(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ReloadError::Invalid(_) | ReloadError::Refused(_) | ReloadError::Empty(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
        }
    }

    /// Every individual problem.
    pub(crate) fn details(&self) -> Vec<String> {
        match self {
            ReloadError::Invalid(errs) => errs.0.iter().map(ToString::to_string).collect(),
            ReloadError::Refused(list) => list.clone(),
            _ => Vec::new(),
        }
    }
}

/// Warn that the policies `names` enforce nothing (at start, and when a reload puts them in report mode).
pub(crate) fn warn_reporting(names: &[&str]) {
    if !names.is_empty() {
        tracing::warn!(
            policies = %names.join(","),
            "policies in report mode: {}: every request of their sandboxes is allowed and only recorded \
             (decision would_deny where a rule would deny); set mode: enforce to enforce them",
            names.join(", ")
        );
    }
}

/// Reloads one configuration file.
pub struct Reloader {
    path: Option<PathBuf>,
    /// SHA-256 of the text last applied, so that a touch without a change is not a reload.
    applied: Mutex<Option<[u8; 32]>>,
    /// SHA-256 of the text last refused, so that a half-finished edit is reported once, not at every event the
    /// file gives until it changes again.
    refused: Mutex<Option<[u8; 32]>>,
    /// One reload at a time, start to finish.
    serial: tokio::sync::Mutex<()>,
}

impl Reloader {
    /// A reloader for `path` (`None`: the embedded configuration, which cannot be reloaded). `text` is what
    /// cordon started with.
    pub fn new(path: Option<PathBuf>, text: Option<&str>) -> Reloader {
        Reloader {
            path,
            applied: Mutex::new(text.map(|t| Sha256::digest(t.as_bytes()).into())),
            refused: Mutex::new(None),
            serial: tokio::sync::Mutex::new(()),
        }
    }

    /// Read, validate, build and swap. A file event whose text is unchanged does nothing.
    pub(crate) async fn reload(&self, state: &ProxyState, trigger: ReloadTrigger) -> Result<Reloaded, ReloadError> {
        let _serial = self.serial.lock().await;
        let result = self.attempt(state, trigger).await;
        match &result {
            Ok(Some(done)) => {
                state.metrics.reload(trigger.code(), "ok");
                tracing::info!(
                    trigger = trigger.code(),
                    generation = done.generation,
                    "configuration reloaded from {}",
                    done.source
                );
            }
            Ok(None) => {}
            Err(e) => {
                let outcome = if matches!(
                    e,
                    ReloadError::Invalid(_) | ReloadError::Refused(_) | ReloadError::Empty(_)
                ) {
                    "invalid"
                } else {
                    "error"
                };
                state.metrics.reload(trigger.code(), outcome);
                tracing::error!(trigger = trigger.code(), "reload refused: {e}");
                for d in e.details() {
                    tracing::error!("  {d}");
                }
                if trigger == ReloadTrigger::File && !matches!(e, ReloadError::Read(_) | ReloadError::NoFile) {
                    tracing::info!("this content is not reported again until the file changes");
                }
            }
        }
        result.map(|done| {
            done.unwrap_or_else(|| Reloaded {
                generation: state.current().number,
                source: self.source(),
            })
        })
    }

    fn source(&self) -> String {
        self.path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| crate::config::EMBEDDED_NAME.to_string())
    }

    async fn attempt(&self, state: &ProxyState, trigger: ReloadTrigger) -> Result<Option<Reloaded>, ReloadError> {
        let Some(path) = &self.path else {
            return Err(ReloadError::NoFile);
        };
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|e| ReloadError::Read(format!("cannot read {}: {e}", path.display())))?;
        let hash: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let unchanged = *self.applied.lock().unwrap_or_else(|p| p.into_inner()) == Some(hash);
        let refused_before = *self.refused.lock().unwrap_or_else(|p| p.into_inner()) == Some(hash);
        if (unchanged || refused_before) && trigger == ReloadTrigger::File {
            return Ok(None);
        }
        let outcome = self.apply(state, path, &text).await;
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        match &outcome {
            Ok(_) => {
                *refused = None;
                *self.applied.lock().unwrap_or_else(|p| p.into_inner()) = Some(hash);
            }
            Err(ReloadError::Empty(_) | ReloadError::Invalid(_) | ReloadError::Refused(_)) => *refused = Some(hash),
            Err(_) => {}
        }
        outcome
    }

    /// Validate `text`, read from `path`, and swap it in.
    async fn apply(
        &self,
        state: &ProxyState,
        path: &std::path::Path,
        text: &str,
    ) -> Result<Option<Reloaded>, ReloadError> {
        // SECURITY: an emptied file is refused like a broken one, as at start (`config::is_blank`).
        if crate::config::is_blank(text) {
            return Err(ReloadError::Empty(path.display().to_string()));
        }
        let config = Config::parse_at(&self.source(), text, crate::config::paths::Base::of_file(path))
            .map_err(ReloadError::Invalid)?;
        config.warnings.iter().for_each(|w| tracing::warn!("{w}"));
        config.warn_jail_only();
        let before = state.current();
        let generation = state.reload(config, restart_only).await.map_err(ReloadError::Refused)?;
        let now = state.current();
        warn_reporting(&crate::policy::newly_reporting(
            &now.config.policies,
            Some(&before.config.policies),
        ));
        Ok(Some(Reloaded {
            generation,
            source: self.source(),
        }))
    }

    /// Reload on SIGHUP, and (with `watch_file`) when the file's folder changes — editors and Kubernetes
    /// ConfigMaps replace files by renaming, so the folder is watched, not the file. Runs until the state is
    /// dropped.
    pub fn spawn_watchers(self: Arc<Self>, state: &Arc<ProxyState>, watch_file: bool) {
        #[cfg(unix)]
        {
            let (me, weak) = (self.clone(), Arc::downgrade(state));
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
                Ok(mut hup) => {
                    tokio::spawn(async move {
                        while hup.recv().await.is_some() {
                            let Some(state) = weak.upgrade() else { return };
                            crate::systemd::reloading();
                            let _ = me.reload(&state, ReloadTrigger::Signal).await;
                            crate::systemd::reloaded();
                        }
                    });
                }
                Err(e) => tracing::warn!("cannot listen for SIGHUP ({e}); reload with POST /v1/reload"),
            }
        }
        if let (true, Some(path)) = (watch_file, self.path.clone()) {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
            let name = path.file_name().map(|n| n.to_os_string());
            let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Only the config file itself (written, or renamed into place by an editor) and a ConfigMap's
                // `..data` swap matter; other files in the folder (an audit log, say) are not a reason to reload.
                if let Ok(event) = event
                    && changes_content(&event.kind)
                    && event.paths.iter().any(|p| concerns_config(p, name.as_deref()))
                {
                    let _ = tx.send(());
                }
            });
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."));
            let mut watcher = match watcher {
                Ok(w) => w,
                Err(e) => {
                    return tracing::warn!("cannot watch {} for changes ({e}); reload with SIGHUP", dir.display());
                }
            };
            if let Some(audit) = state.current().config.audit_file()
                && same_folder(audit, &dir)
            {
                // Advice, not a fault: the watcher drops those events, each costs it a wake-up.
                tracing::info!(
                    "audit.path {} is in the folder watched for configuration changes ({}): every audit record \
                     wakes the watcher, which ignores it; under heavy load write the audit log elsewhere, or set \
                     control.watch: false",
                    audit.display(),
                    dir.display()
                );
            }
            if let Err(e) = notify::Watcher::watch(&mut watcher, &dir, notify::RecursiveMode::NonRecursive) {
                return tracing::warn!("cannot watch {} for changes ({e}); reload with SIGHUP", dir.display());
            }
            let weak = Arc::downgrade(state);
            tokio::spawn(async move {
                let _watcher = watcher;
                while rx.recv().await.is_some() {
                    // Editors write in several steps: wait for them to settle, then read once.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    while rx.try_recv().is_ok() {}
                    let Some(state) = weak.upgrade() else { return };
                    let _ = self.reload(&state, ReloadTrigger::File).await;
                }
            });
        }
    }
}

/// Whether an event can change what the file says: written, created, renamed or removed. Reading it (cordon's
/// own read after every event, an editor, `cordon check`) and touching its metadata cannot, and would wake the
/// watcher forever.
fn changes_content(kind: &notify::EventKind) -> bool {
    use notify::EventKind;
    use notify::event::{AccessKind, AccessMode, ModifyKind};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any | EventKind::Other => true,
    }
}

/// Whether a changed path is the configuration file, or a Kubernetes ConfigMap's `..data` indirection.
fn concerns_config(changed: &std::path::Path, config: Option<&std::ffi::OsStr>) -> bool {
    match changed.file_name() {
        Some(n) => Some(n) == config || n.to_string_lossy().starts_with(".."),
        None => false,
    }
}

fn same_folder(file: &std::path::Path, dir: &std::path::Path) -> bool {
    let parent = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    match (parent.canonicalize(), dir.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => parent == dir,
    }
}

/// What a reload cannot change while cordon runs.
fn restart_only(old: &Config, new: &Config) -> Vec<String> {
    let mut errors = Vec::new();
    let mut same = |what: &str, a: String, b: String| {
        if a != b {
            errors.push(format!("{what}: changed from {a} to {b}; this takes a restart"));
        }
    };
    same(
        "listen.proxy",
        old.listen.proxy.to_string(),
        new.listen.proxy.to_string(),
    );
    same(
        "listen.admin",
        format!("{:?}", old.listen.admin),
        format!("{:?}", new.listen.admin),
    );
    same(
        "listen.transparent",
        format!("{:?}", old.listen.transparent),
        format!("{:?}", new.listen.transparent),
    );
    same(
        "listen.transparent_tproxy",
        old.listen.transparent_tproxy.to_string(),
        new.listen.transparent_tproxy.to_string(),
    );
    same(
        "listen.dns",
        format!("{:?}", old.listen.dns),
        format!("{:?}", new.listen.dns),
    );
    same("audit.path", format!("{:?}", old.audit), format!("{:?}", new.audit));
    same(
        "limits.max_connections",
        old.limits.max_connections.to_string(),
        new.limits.max_connections.to_string(),
    );
    same(
        "ca.dir",
        old.ca.dir.display().to_string(),
        new.ca.dir.display().to_string(),
    );
    same(
        "control.store",
        format!("{:?}", old.control.store),
        format!("{:?}", new.control.store),
    );
    same(
        "control.store (PostgreSQL)",
        format!("{:?}", old.control.postgres),
        format!("{:?}", new.control.postgres),
    );
    same("approval", format!("{:?}", old.approval), format!("{:?}", new.approval));
    same(
        "log.format",
        format!("{:?}", old.log_format),
        format!("{:?}", new.log_format),
    );
    if new.control.postgres.is_some() {
        // Replicas count bytes in the same wall-clock slots; a slot of another length would not add up.
        same(
            "limits.per_sandbox.budget_window (with a PostgreSQL store)",
            format!("{:?}", old.limits.rates.budget_window),
            format!("{:?}", new.limits.rates.budget_window),
        );
    }
    same(
        "control.signing_key",
        format!("{:?}", old.control.signing_key),
        format!("{:?}", new.control.signing_key),
    );
    // The listeners people and platforms reach, their certificates and the console's sign-in.
    let d = |v: &dyn std::fmt::Debug| format!("{v:?}");
    same("listen.preview", d(&old.listen.preview), d(&new.listen.preview));
    same("listen.console", d(&old.listen.console), d(&new.listen.console));
    same("previews", d(&old.previews), d(&new.previews));
    same("admin.tls", d(&old.admin_tls), d(&new.admin_tls));
    // The roles a person's groups give may change (open sessions follow); the rest of the console may not.
    let console = |c: &Option<crate::config::console::ConsoleConfig>| c.as_ref().map(|c| c.restart_only());
    same("console", d(&console(&old.console)), d(&console(&new.console)));
    errors
}

#[cfg(test)]
mod watch_filter_tests {
    use super::*;

    #[test]
    fn only_the_config_file_and_configmap_swaps_trigger_a_reload() {
        let name = Some(std::ffi::OsStr::new("cordon.yaml"));
        assert!(concerns_config(std::path::Path::new("/etc/cordon/cordon.yaml"), name));
        assert!(concerns_config(std::path::Path::new("/etc/cordon/..data"), name));
        assert!(concerns_config(
            std::path::Path::new("/etc/cordon/..2026_11_29_20_00_00.123"),
            name
        ));
        assert!(!concerns_config(std::path::Path::new("/etc/cordon/audit.jsonl"), name));
        assert!(!concerns_config(
            std::path::Path::new("/etc/cordon/.cordon.yaml.swp"),
            name
        ));
    }
}
