//! The namespace jail's command: bubblewrap's view under the base seccomp filter, in the jail's namespace and
//! cgroup, with the activity recorder when the log is on.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use super::common::{self, ChildSignals, wait};
use super::plan::Plan;
use super::{activity, confine, limits, seccomp};

/// Where the activity log's socket and cordon's binary (which puts the command under the activity filter) are
/// inside the root jail.
const ACTIVITY: &str = "/run/cordon-activity";

/// The command and how it is confined.
pub(super) struct Confined<'a> {
    /// Whom it runs as.
    pub(super) who: confine::Who,
    /// What it sees of the host.
    pub(super) view: super::view::View,
    /// The command and its arguments.
    pub(super) command: Vec<String>,
    /// What gives its first process default signal dispositions.
    pub(super) child_signals: ChildSignals,
    /// What keeps git's files in the writable folder read-only.
    pub(super) git: Option<&'a super::git::GitGuard>,
    /// bubblewrap's namespaces or gVisor.
    pub(super) isolation: crate::config::jail::Isolation,
}

/// Run the command under bubblewrap (the namespace jail), with the activity recorder when the log is on.
pub(super) async fn run(
    plan: &Plan,
    confined: &Confined<'_>,
    mut visible: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    env: &BTreeMap<String, String>,
    cwd: &Path,
    supervision: &limits::Supervision,
) -> Result<i32, String> {
    let mut command = Vec::new();
    let recorder = match supervision.activity() {
        Some((sink, sandbox, user)) => {
            let r = activity::Recorder::start(&plan.run_dir, sink, sandbox, user)?;
            let exe = std::env::current_exe().map_err(|e| format!("cannot find cordon's own binary: {e}"))?;
            let (inside_exe, inside_socket) = (
                Path::new(ACTIVITY).join("cordon"),
                Path::new(ACTIVITY).join("activity.sock"),
            );
            visible.push((exe, inside_exe.clone()));
            visible.push((r.socket().to_path_buf(), inside_socket.clone()));
            command.extend([
                inside_exe.to_string_lossy().into_owned(),
                "jail-activity".into(),
                "--socket".into(),
                inside_socket.to_string_lossy().into_owned(),
                "--".into(),
            ]);
            Some(r)
        }
        None => None,
    };
    command.extend(supervision.bounds.rlimits());
    command.extend(confined.command.iter().cloned());
    let line = confine::command_line(&confined.who, &confined.view, &visible, env, cwd, &command);
    // SECURITY: the command runs under the base seccomp filter (io_uring, ptrace, keyrings, foreign ABIs and
    // socket families refused), which bubblewrap applies before it starts setpriv, so all it starts inherit it.
    let filter = seccomp::for_bubblewrap(&seccomp::base()?, &plan.run_dir.join("seccomp.bpf"))?;
    let line = with_seccomp(line, &filter);
    supervision.started();
    let code = run_command(plan, &line, supervision, confined.child_signals).await;
    if let Some(r) = recorder {
        r.finish();
    }
    drop(filter);
    code
}

/// `line` (bubblewrap's, from `confine`) with `--seccomp FD` for the descriptor of `filter`.
fn with_seccomp(mut line: Vec<String>, filter: &File) -> Vec<String> {
    use std::os::fd::AsRawFd;
    let at = usize::from(line.first().is_some_and(|b| b == "bwrap"));
    line.splice(at..at, ["--seccomp".to_string(), filter.as_raw_fd().to_string()]);
    line
}

/// Run the confined command line in the namespace, in the jail's cgroup (if it has one) from its first process,
/// under its limits; the signals that would end cordon are passed on to it.
async fn run_command(
    plan: &Plan,
    line: &[String],
    supervision: &limits::Supervision,
    child_signals: ChildSignals,
) -> Result<i32, String> {
    let started = common::Started::new(&plan.run_dir)?;
    let mut line = line.to_vec();
    started.wrap(&mut line);
    let mut full = supervision.bounds.enter();
    full.extend(["ip", "netns", "exec", &plan.netns].map(String::from));
    full.extend(line);
    let (program, args) = full.split_first().ok_or("an empty command line")?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let code = wait(
        &mut command,
        Some(supervision),
        child_signals,
        &common::SignalReach::Descendants,
    )
    .await?;
    started.outcome(code)
}
