//! What a root jail killed outright (SIGKILL, a crash, the machine's OOM killer) leaves on the host, found and
//! removed whole by the next jail for the sandbox or by `cordon jail --cleanup`: the network parts (the namespace,
//! the veth pair, the rules: [`net`]), the processes still in the namespace (the command's, or gVisor's sandbox
//! and gofer), the mounts in the jail's run folder (its private home, the gVisor jail's start word), gVisor's
//! state, and the jail's cgroups.

use super::confine;
use super::limits::cgroup::Cgroup;
use super::net;
use super::plan::Plan;

/// The run folder's parts a jail makes afresh each time, removed with what was mounted in them.
const MADE: [&str; 2] = ["private", "gvisor"];

/// What an earlier jail for `plan`'s sandbox left, named for the operator; `cgroup_parent` is `jail.cgroup`.
pub(crate) fn found(plan: &Plan, cgroup_parent: Option<&std::path::Path>) -> Vec<String> {
    let mut found = net::leftovers(plan);
    found.extend(
        confine::mounts_under(&plan.run_dir)
            .into_iter()
            .map(|m| format!("mount {}", m.display())),
    );
    let gvisor = plan.run_dir.join("gvisor");
    if gvisor.exists() {
        found.push(format!("gVisor state {}", gvisor.display()));
    }
    for cgroup in Cgroup::stale(plan.sandbox.as_str(), cgroup_parent) {
        found.extend(cgroup.folders().map(|f| format!("cgroup {}", f.display())));
    }
    found
}

/// Remove the parts of `run_dir` a jail makes afresh ([`MADE`]).
fn remove_made(run_dir: &std::path::Path) -> Result<(), String> {
    // SECURITY: nothing is removed while anything is still mounted under the run folder: a folder's removal
    // must never reach into a file system mounted there.
    let still = confine::mounts_under(run_dir);
    if !still.is_empty() {
        return Err(format!(
            "{} is still mounted, so the run folder is left as it is",
            still
                .iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for part in MADE {
        let dir = run_dir.join(part);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot remove {}: {e}", dir.display())),
        }
    }
    Ok(())
}

/// Remove what [`found`] finds; the problems, if any. The network goes first (nothing left inside can reach
/// anything once the link is gone, and the namespace's processes are killed with it), then the mounts, the
/// folders, and the cgroups once the processes in them are killed.
pub(crate) fn remove(plan: &Plan, cgroup_parent: Option<&std::path::Path>) -> Vec<String> {
    let mut problems = net::teardown(plan);
    for mount in confine::mounts_under(&plan.run_dir) {
        if let Err(e) = nix::mount::umount2(&mount, nix::mount::MntFlags::MNT_DETACH) {
            problems.push(format!("cannot unmount {}: {e}", mount.display()));
        }
    }
    if let Err(e) = remove_made(&plan.run_dir) {
        problems.push(e);
    }
    for cgroup in Cgroup::stale(plan.sandbox.as_str(), cgroup_parent) {
        cgroup.kill_all();
        cgroup.remove();
        problems.extend(
            cgroup
                .folders()
                .filter(|f| f.exists())
                .map(|f| format!("cannot remove the cgroup {}", f.display())),
        );
    }
    problems
}

#[cfg(test)]
#[path = "leftovers_tests.rs"]
mod tests;
