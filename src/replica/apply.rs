//! Applying one announcement from another replica, and learning of a sandbox before its credential is judged.

use std::time::Duration;

use super::follower::Follower;
use crate::approval::Approvals;
use crate::control::Control;
use crate::pg::listen::Event;
use crate::tls::ca::SandboxCas;

/// The longest a request waits to learn a sandbox created on another replica a moment ago.
const LEARN_TIMEOUT: Duration = Duration::from_secs(2);

/// Apply one announcement to `f`.
pub(super) async fn apply(f: &dyn Follower, event: &Event) -> Result<(), String> {
    let cas = f.cas().in_db();
    let control = f.control();
    match event {
        Event::Resync => {
            control.resync().await.map_err(|e| e.to_string())?;
            // Whatever changed while announcements were missed (a policy among it) is decided again.
            f.sweep(true);
            if let Some(cas) = cas {
                cas.load_all().await.map_err(|e| e.to_string())?;
            }
            if let Some(shared) = f.approvals().shared() {
                let all = shared.grants().await.map_err(|e| e.to_string())?;
                f.approvals().apply_shared_grants(all);
            }
            // The decisions of the asks this replica holds, read again.
            for id in f.approvals().held() {
                approval_decided(f.approvals(), &id).await?;
            }
            Ok(())
        }
        Event::Sandbox(id) => {
            // The CA first: a sandbox this replica knows always has the CA its interception needs.
            if let Some(cas) = cas
                && cas.get(id).is_none()
            {
                cas.learn(id).await.map_err(|e| e.to_string())?;
            }
            let before = control.policy_of(id);
            control.learn(id).await.map_err(|e| e.to_string())?;
            if control.policy_of(id) != before {
                // Another replica changed its policy: tunnels it no longer allows close here too.
                f.sweep(true);
            }
            Ok(())
        }
        Event::Ca(id) => {
            if let Some(cas) = cas {
                cas.learn(id).await.map_err(|e| e.to_string())?;
            }
            // A rotated CA: leaves of the old one are not served again.
            f.leaves().invalidate_sandbox(id);
            Ok(())
        }
        Event::Approval(id) => approval_decided(f.approvals(), id).await,
        Event::Grant(id) => {
            let Some(shared) = f.approvals().shared() else {
                return Ok(());
            };
            // A grant was made or withdrawn on some replica.
            let grant = shared.grant(id).await.map_err(|e| e.to_string())?;
            f.approvals().apply_shared_grant(id, grant);
            Ok(())
        }
    }
}

/// A pending approval was decided on some replica: release the request if this replica holds it.
async fn approval_decided(approvals: &Approvals, id: &str) -> Result<(), String> {
    let Some(shared) = approvals.shared() else {
        return Ok(());
    };
    if !approvals.holds(id) {
        return Ok(());
    }
    let Some(written) = shared.decision(id).await.map_err(|e| e.to_string())? else {
        return Ok(());
    };
    match approvals.decide(id, written.verdict, written.scope, &written.by) {
        Ok(_) => tracing::info!(approval = %id, by = %written.by, "approval decided on another replica, applied"),
        Err(e) => tracing::debug!(approval = %id, "a decision from another replica: {e}"),
    }
    Ok(())
}

/// Make sure this replica knows sandbox `id` (created on another replica a moment ago) before its credential
/// is judged: one read of the shared store, bounded. Nothing happens with a SQLite store, or when the
/// sandbox is known.
pub(crate) async fn learn_sandbox(control: &Control, cas: &SandboxCas, id: &str, credential: &str) {
    // Every credentialed request passes here: the cheap tests first (no copy, no signature check for a
    // declared sandbox's token or a sandbox already known).
    if !control.is_shared() || !crate::identity::signed::looks_signed(credential) {
        return;
    }
    // The id as the sandbox sent it: text that is no id names no sandbox to learn.
    let Ok(sandbox) = crate::names::SandboxId::parse(id) else {
        return;
    };
    // Known is not enough: an announcement applied half-way (the record read, its CA not yet) leaves a
    // live sandbox whose interception would fail, so its missing CA is learned here too.
    if control.knows(&sandbox) {
        let ca_held = cas.in_db().is_none_or(|cas| cas.get(&sandbox).is_some());
        if ca_held || !control.knows_live(&sandbox, crate::control::now()) {
            return;
        }
    }
    // SECURITY: only a credential signed for this id makes a read: made-up ids cannot load the database.
    if !control.signed_for(&sandbox, credential) {
        return;
    }
    let learn = async {
        if (control.knows(&sandbox) || control.learn(&sandbox).await?)
            && let Some(cas) = cas.in_db()
            && cas.get(&sandbox).is_none()
        {
            let _ = cas.learn(&sandbox).await;
        }
        Ok::<(), crate::control::ControlError>(())
    };
    match tokio::time::timeout(LEARN_TIMEOUT, learn).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(sandbox = %id, "cannot learn of a sandbox: {e}"),
        Err(_) => tracing::warn!(sandbox = %id, "the shared store did not answer in time; sandbox unknown here"),
    }
}
