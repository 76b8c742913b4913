//! `cordon check`: the summary of a configuration that loaded and would start, and with `--probe` one
//! request to each credential source that needs the network.

use std::process::ExitCode;

use crate::config::Config;
use crate::logging::Stderr;

/// `cordon check [--probe]`.
#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) config: super::args::ConfigArg,
    /// Also ask each credential whose source needs the network (OpenBao, an OAuth2 token endpoint, STS, a
    /// GitHub App) for its value, once, and print each result; exit 1 if any fails.
    #[arg(long)]
    pub(crate) probe: bool,
    /// Print the summary as one JSON object (its shape: the CLI reference, "cordon check --json"); probe
    /// results in its "probe" array. Errors stay on stderr (as JSON lines with CORDON_LOG_FORMAT=json).
    #[arg(long)]
    pub(crate) json: bool,
    /// Make the configuration's warnings errors: exit 1 when there is any (a wildcard under a public suffix, a
    /// range holding private, loopback or link-local space, a rule that can never match, ...).
    #[arg(long)]
    pub(crate) strict: bool,
}

/// Print the summary; with `probe`, probe and print each network credential's result; as one JSON object
/// with `json`. Errors go to `err`, in the format the configuration (or `CORDON_LOG_FORMAT`) chose, like every
/// other line `check` writes there.
pub(crate) fn main(config: &Config, args: &CheckArgs, err: Stderr) -> ExitCode {
    if args.strict && !config.warnings.is_empty() {
        err.error(&format!(
            "{} warning(s), which --strict makes errors (each is printed above); fix them, or drop --strict",
            config.warnings.len()
        ));
        return ExitCode::FAILURE;
    }
    let paint = super::style::Paint::stdout();
    if !args.json {
        outln!("{}: {}", config.source, paint.good("ok"));
        print_summary(config);
    }
    let probed = if args.probe {
        match probe(config) {
            Ok(p) => Some(p),
            Err(e) => {
                err.error(&e);
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    if args.json {
        out!(
            "{}",
            super::sandbox::pretty(&super::check_json::summary(config, probed.as_deref()))
        );
    } else if let Some(probed) = &probed {
        if probed.is_empty() {
            outln!("probe    no credential needs the network");
        }
        for p in probed {
            match &p.result {
                Ok(()) => outln!("probe    credential {} ({}): {}", p.name, p.reaches, paint.good("ok")),
                Err(e) => outln!("probe    credential {} ({}): {}", p.name, p.reaches, paint.bad(e)),
            }
        }
    }
    let failed = probed.iter().flatten().filter(|p| p.result.is_err()).count();
    if failed > 0 {
        err.error(&format!(
            "{failed} credential(s) cannot be supplied now; requests that use them would fail"
        ));
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Ask each credential whose source needs the network for its value, once.
fn probe(config: &Config) -> Result<Vec<crate::secrets::probe::Probed>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let secrets =
            crate::secrets::Secrets::new(config).map_err(|e| format!("cannot open the credential sources: {e}"))?;
        Ok(crate::secrets::probe::probe_all(&secrets, config).await)
    })
}

/// Print what the configuration sets up (after the line that says it is ok).
fn print_summary(c: &Config) {
    if let Some(folder) = c.base.folder() {
        let whose = if c.source == crate::config::EMBEDDED_NAME {
            "the state folder"
        } else {
            "the file's folder"
        };
        outln!("paths    relative to {} ({whose})", folder.display());
    }
    match c.listen.admin {
        Some(admin) => {
            let how = match (&c.admin_tls, c.listen.admin_api_served(c.admin_tls.is_some())) {
                (Some(t), _) if t.client_ca.is_some() => "HTTPS, /v1 callers need a client certificate",
                (Some(_), _) => "HTTPS",
                (None, true) => "plain HTTP on loopback",
                (None, false) => "plain HTTP off loopback: /healthz, /readyz and /metrics only; /v1 needs admin.tls",
            };
            outln!("listen   proxy {}, admin {admin} ({how})", c.listen.proxy);
        }
        None => outln!("listen   proxy {} (no admin API)", c.listen.proxy),
    }
    if let Some(console) = &c.console {
        let (at, how) = match c.listen.console {
            Some(a) if console.tls.is_some() => (a.to_string(), "HTTPS"),
            Some(a) => (a.to_string(), "plain HTTP on loopback"),
            None => (
                format!(
                    "{} under /console/",
                    c.listen.admin.map(|a| a.to_string()).unwrap_or_default()
                ),
                "the admin listener's",
            ),
        };
        // With admin.tls.client_ca, a token needs its certificate, which only the admin listener asks for.
        let certs = c.admin_tls.as_ref().is_some_and(|t| t.client_ca.is_some());
        let token = match (certs, c.listen.console) {
            (false, _) => Some("a token"),
            (true, None) => Some("a token with its client certificate"),
            (true, Some(_)) => None,
        };
        let sign_in = match (&console.oidc, token) {
            (Some(o), Some(t)) => format!(
                "OpenID Connect at {} (roles from the claim {}) or {t}",
                o.issuer, o.roles_claim
            ),
            (Some(o), None) => format!(
                "OpenID Connect at {} (roles from the claim {}); no token here (admin.tls.client_ca)",
                o.issuer, o.roles_claim
            ),
            (None, t) => format!("an admin {}", t.unwrap_or("token").trim_start_matches("a ")),
        };
        outln!(
            "         console {at} ({how}; sign in with {sign_in}; sessions {})",
            humantime::format_duration(console.session_ttl)
        );
    }
    if let Some(t) = c.listen.transparent {
        let how = if c.listen.transparent_tproxy {
            "TPROXY"
        } else {
            "REDIRECT"
        };
        outln!("         transparent {t} ({how})");
    }
    if let Some(d) = c.listen.dns {
        outln!("         dns {d} (UDP and TCP)");
    }
    if let (Some(a), Some(p)) = (c.listen.preview, &c.previews) {
        outln!(
            "         preview {a} ({}, <port>-<sandbox>.{}; links live {}, sessions {})",
            if p.tls.is_some() {
                "HTTPS"
            } else {
                "plain HTTP on loopback"
            },
            p.domain,
            humantime::format_duration(p.link_ttl),
            humantime::format_duration(p.session_ttl)
        );
    }
    let store = c
        .control
        .store
        .as_ref()
        .map(|p| p.display().to_string())
        .or_else(|| c.control.postgres.as_ref().map(|p| p.dsn.clone()))
        .unwrap_or_else(|| "in memory".into());
    outln!(
        "control  store {store}, sandbox lifetime {} (at most {})",
        humantime::format_duration(c.control.default_ttl),
        humantime::format_duration(c.control.max_ttl)
    );
    if !c.control.admin_tokens.is_empty() {
        let tokens: Vec<String> = c
            .control
            .admin_tokens
            .iter()
            .map(|t| format!("{} ({})", t.name, t.roles.names()))
            .collect();
        outln!("         admin tokens {}", tokens.join(", "));
    }
    let j = &c.jail;
    let mut jail = format!("jail     limits {}", j.defaults.summary());
    for (policy, own) in &j.per_policy {
        jail.push_str(&format!("; policy {policy}: {}", j.defaults.with(*own).summary()));
    }
    jail.push_str(if j.activity {
        "; activity log on"
    } else {
        "; activity log off"
    });
    if let Some(n) = j.per_user {
        jail.push_str(&format!("; at most {n} per user"));
    }
    outln!("{jail}");
    let rate = |r: Option<crate::limits::Rate>| {
        r.map(|r| format!("{}/s burst {}", r.per_second, r.burst))
            .unwrap_or_else(|| "unlimited".into())
    };
    let l = &c.limits.rates;
    outln!(
        "limits   per sandbox {} requests, {} open; per user {} requests; budgets {}",
        rate(l.sandbox_requests),
        l.sandbox_open
            .map(|n| n.to_string())
            .unwrap_or_else(|| "unlimited".into()),
        rate(l.user_requests),
        if l.sandbox_upload.is_some() || l.sandbox_download.is_some() {
            "on"
        } else {
            "off"
        }
    );
    let audit = match &c.audit {
        crate::config::AuditConfig::Stdout => "stdout".to_string(),
        crate::config::AuditConfig::File(p) => p.display().to_string(),
    };
    let export = match &c.audit_chain.otlp {
        Some(o) => format!("; exported to {} (spool {})", o.endpoint, o.spool.display()),
        None => String::new(),
    };
    outln!("audit    {audit}{export}");
    outln!(
        "network  {} allowed CIDRs, {} dangerous metadata exceptions, {} host overrides, resolver {}",
        c.network.allow_cidrs.len(),
        c.network.dangerous_allow_metadata.len(),
        c.network.hosts.len(),
        c.network.resolver.name()
    );
    outln!("sandboxes {}", c.sandboxes.len());
    for s in &c.sandboxes {
        let how = match (s.token_sha256.is_some(), s.source_cidrs.is_empty()) {
            (true, true) => "token".to_string(),
            (true, false) => format!("token or source {:?}", s.source_cidrs),
            (false, false) => format!("source {:?}", s.source_cidrs),
            (false, true) => "cordon jail alone (a credential of the jail's own)".to_string(),
        };
        outln!("  {:<16} user {:<16} policy {:<12} by {how}", s.id, s.user, s.policy);
    }
    outln!("policies {}", c.policies.len());
    for (name, p) in &c.policies {
        let on_violation = c.on_violation.get(name).map_or(String::new(), |o| {
            let kinds: Vec<String> = o
                .thresholds
                .iter()
                .map(|(k, n)| format!("{} {n}", k.as_str()))
                .collect();
            format!(
                "; on_violation {} within {} -> {}",
                kinds.join(", "),
                humantime::format_duration(o.window),
                o.action.as_str()
            )
        });
        let narrowed: Vec<String> = p
            .credential_scope
            .iter()
            .map(|(cred, o)| match o.session_policy {
                Some(_) => format!("{cred} (session policy)"),
                None => cred.clone(),
            })
            .collect();
        let narrowed = match narrowed.is_empty() {
            true => String::new(),
            false => format!("; narrows {}", narrowed.join(", ")),
        };
        let exposed = match p.expose.is_empty() {
            true => String::new(),
            false => format!(
                "; exposes {}",
                p.expose.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        outln!(
            "  {:<16} {:<8} {} rules{exposed}{narrowed}{on_violation}",
            name,
            p.mode.as_str(),
            p.rule_count()
        );
    }
    for (name, spec) in &c.credentials {
        outln!("credential {name}: {}", super::check_json::credential_kind(spec));
    }
    let budgets = &c.credential_budgets;
    let shown = budgets.credentials.iter().map(|(cred, b)| (cred.clone(), b)).chain(
        budgets
            .policies
            .iter()
            .map(|((p, cred), b)| (format!("{cred} in {p}"), b)),
    );
    for (what, b) in shown {
        let mut limits = Vec::new();
        limits.extend(b.budget.requests.map(|n| format!("{n} requests")));
        limits.extend(b.budget.bytes.map(|n| format!("{n} bytes")));
        outln!(
            "budget   {what}: {} per {} per {}",
            limits.join(", "),
            humantime::format_duration(b.budget.window),
            if b.per_user { "user" } else { "sandbox" }
        );
    }
}
