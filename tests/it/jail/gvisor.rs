//! `cordon jail --isolation gvisor`: the escape suite's network and file cases against the gVisor jail, its exit
//! codes and signals, and `isolation:` in the configuration.

use std::time::Duration;

use cordon::jail::Plan;

use crate::rigs::gateway::World;
use crate::rigs::jail::{jail, leftovers};
use crate::rigs::netns::available;
use crate::rigs::wait::{TimedChild, Within};

/// The flags of the gVisor jail.
const GVISOR: [&str; 2] = ["--isolation", "gvisor"];

/// Whether runsc is here (in CI it must be: the test fails loudly without it).
fn runsc(test: &str) -> bool {
    if !available(test) {
        return false;
    }
    let here = std::process::Command::new("runsc").arg("--version").output().is_ok_and(|o| o.status.success());
    if !here && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: runsc (gVisor) is not installed; CI installs the Debian package runsc (.ci/run)");
    }
    if !here {
        eprintln!("skipping {test}: runsc (gVisor) is not installed");
    }
    here
}

fn plan(id: &str) -> Plan {
    Plan::new(
        &cordon::names::SandboxId::parse(id).unwrap(),
        cordon::jail::plan::DEFAULT_SUBNET.parse().unwrap(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gvisor_jail_reaches_only_cordon_and_leaves_nothing() {
    if !runsc("the_gvisor_jail_reaches_only_cordon_and_leaves_nothing") {
        return;
    }
    let w = World::new().await;
    let id = format!("gvnet{}", w.net.n);
    let config = w.config(&id, "", None);
    super::root::reaches_only_cordon(&w, &config, &id, &GVISOR);
    super::root::err_has_rules(&w, &config, &id, &GVISOR, "under gVisor (runsc)");
    assert!(leftovers(&w, &plan(&id)).is_empty(), "{:?}", leftovers(&w, &plan(&id)));
}
