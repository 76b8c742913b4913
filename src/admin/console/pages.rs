//! The console's HTML: whole pages and the fragments the page swaps in when the server says something changed.
//! Every value is escaped by the template (maud); the held request's texts come already shown the way the API
//! shows them (`approval::visible`: control, bidirectional and invisible characters written as escapes).

use maud::{DOCTYPE, Markup, html};
use serde_json::Value;

use crate::audit::Seen;
use crate::principal::{Principal, Via};

/// Who is looking, the token their forms carry, and where their session's pages are (`/console/s/{place}/`).
pub(super) struct Viewer<'a> {
    pub(super) principal: &'a Principal,
    pub(super) csrf: &'a str,
    pub(super) base: &'a str,
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

/// A whole page: `title`, the navigation for `viewer` (none on the sign-in pages), and `main`.
pub(super) fn page(title: &str, viewer: Option<&Viewer<'_>>, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" data-base=[viewer.map(|v| v.base)] {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "cordon · " (title) }
                link rel="stylesheet" href="/console/static/style.css";
                script src="/console/static/app.js" defer {}
            }
            body {
                header {
                    span.brand { "cordon" }
                    @if let Some(v) = viewer {
                        nav {
                            a href=(v.base) { "Inbox" }
                            a href={ (v.base) "sandboxes" } { "Sandboxes" }
                        }
                        span.who id="who" {
                            (v.principal.name) " "
                            span.roles { "(" (v.principal.roles.names()) ", "
                                (match v.principal.via { Via::Oidc => "signed in with OpenID Connect", Via::Token => "signed in with a token" })
                                ")" }
                        }
                        form.inline method="post" action={ (v.base) "logout" } {
                            input type="hidden" name="csrf" value=(v.csrf);
                            button type="submit" id="sign-out" { "Sign out" }
                        }
                    }
                }
                main { (main) }
            }
        }
    }
}

/// The inbox page: the held requests, and the latest decisions.
pub(super) fn inbox(viewer: &Viewer<'_>, note: Option<&str>, held: Markup, asked: Markup, decisions: Markup) -> Markup {
    page(
        "Inbox",
        Some(viewer),
        html! {
            @if let Some(n) = note { p.notice id="notice" { (n) } }
            h1 { "Held requests" }
            p.lead { "Requests a policy rule marked " code { "ask" } ", waiting for a person. This list updates by itself." }
            section id="inbox" data-live="approvals" { (held) }
            h2 { "Access requests" }
            p.lead { "Access sandboxes asked for from inside, inside their policy's boundary: what each would add, with a request that shows it. Reload to see new ones." }
            section id="access" { (asked) }
            h2 { "Latest decisions" }
            section id="decisions" data-live="approvals" { (decisions) }
        },
    )
}

/// The held requests, each with its decision buttons when `decide` (the viewer, who may) is given.
pub(super) fn held(pending: &[Value], decide: Option<&Viewer<'_>>, error: Option<&str>) -> Markup {
    html! {
        @if let Some(e) = error { p.error { (e) } }
        @if pending.is_empty() && error.is_none() { p.empty { "Nothing is waiting for a decision." } }
        @for p in pending {
            @let id = text(p, "id");
            article.held data-approval=(id) {
                h3 { span.method { (text(p, "method")) } " " code.url { (text(p, "url")) } }
                dl {
                    dt { "Sandbox" } dd { code { (text(p, "sandbox")) } }
                    dt { "User" } dd { (text(p, "user")) }
                    dt { "Policy" } dd { (text(p, "policy")) ", rule " (p.get("rule").and_then(Value::as_u64).unwrap_or_default()) }
                    dt { "Asked" } dd { (text(p, "asked_at")) }
                    dt { "Times out" } dd { (text(p, "expires_at")) }
                    @for (key, label) in [("tools", "MCP tools"), ("operations", "GraphQL operations"), ("spent", "Model budget spent")] {
                        @if let Some(list) = p.get(key).and_then(Value::as_array) {
                            dt { (label) }
                            dd { @for item in list { code { (item.as_str().unwrap_or_default()) } " " } }
                        }
                    }
                }
                table.headers {
                    caption { "Headers (credentials redacted)" }
                    @for h in p.get("headers").and_then(Value::as_array).into_iter().flatten() {
                        tr { th { (text(h, "name")) } td { code { (text(h, "value")) } } }
                    }
                }
                @let body = p.get("body").cloned().unwrap_or_default();
                p.body {
                    "Body: " (body.get("length").and_then(Value::as_u64).unwrap_or_default()) " bytes, SHA-256 "
                    code { (text(&body, "sha256")) }
                }
                @if !text(p, "excerpt").is_empty() { pre.excerpt { (text(p, "excerpt")) } }
                // The body's start is not all of it: an MCP call's arguments are shown whole, scrollable.
                @for c in p.get("calls").and_then(Value::as_array).into_iter().flatten() {
                    section.call {
                        h4 { "Tool call " code { (text(c, "tool")) } ", its arguments whole:" }
                        pre.arguments { (text(c, "arguments")) }
                    }
                }
                @if let Some(v) = decide {
                    form.decide method="post" action={ (v.base) "approvals/" (id) } {
                        input type="hidden" name="csrf" value=(v.csrf);
                        button.allow type="submit" name="act" value="allow_once" { "Approve once" }
                        button type="submit" name="act" value="allow_exact" title="This request and every later one with the same method, URL and body" { "Approve exact" }
                        button type="submit" name="act" value="allow_always" title="Every later request with the same method, host and path" { "Approve always…" }
                        button.deny type="submit" name="act" value="deny" { "Deny" }
                    }
                } @else {
                    p.note { "You may look but not decide: deciding needs the approver or admin role." }
                }
            }
        }
    }
}

/// The access requests (the admin API's objects), each with grant and deny buttons while it waits, and a revoke
/// button while it is granted, when `decide` (the viewer, who may) is given.
pub(super) fn asked(list: &[Value], decide: Option<&Viewer<'_>>) -> Markup {
    html! {
        @if list.is_empty() { p.empty { "No sandbox has asked for access." } }
        @for r in list {
            @let id = text(r, "id");
            @let state = text(r, "state");
            article.asked data-access=(id) data-state=(state) {
                h3 { code { (text(r, "sandbox")) } " asks: " span.state { (state) } }
                dl {
                    dt { "User" } dd { (text(r, "user")) }
                    dt { "Policy" } dd { (text(r, "policy")) }
                    dt { "Reason" } dd.reason { (text(r, "reason")) }
                    dt { "For" } dd { (r.get("lifetime_seconds").and_then(Value::as_u64).unwrap_or_default()) " s" }
                    dt { "Credentials" } dd {
                        @if r.get("reaches_credentials").and_then(Value::as_bool) == Some(true) {
                            strong { "a request it lets through may carry one of the policy's credentials" }
                        } @else { "reaches none" }
                    }
                    @if !text(r, "expires_at").is_empty() { dt { "Until" } dd { (text(r, "expires_at")) } }
                    @if !text(r, "decided_by").is_empty() { dt { "Decided by" } dd { (text(r, "decided_by")) } }
                }
                ul.adds {
                    @for a in r.get("adds").and_then(Value::as_array).into_iter().flatten() {
                        li {
                            (text(a, "kind")) " (" code { (text(a, "path")) } "): " (text(a, "message"))
                            @if !text(a, "example").is_empty() { br; "for example " code { (text(a, "example")) } }
                        }
                    }
                }
                @if let Some(v) = decide {
                    @if state == "pending" {
                        form.decide method="post" action={ (v.base) "access/" (id) } {
                            input type="hidden" name="csrf" value=(v.csrf);
                            button.allow type="submit" name="act" value="grant" { "Grant" }
                            button.deny type="submit" name="act" value="deny" { "Deny" }
                        }
                    } @else if state == "granted" {
                        form.decide method="post" action={ (v.base) "access/" (id) } {
                            input type="hidden" name="csrf" value=(v.csrf);
                            button.deny type="submit" name="act" value="revoke" { "Revoke" }
                        }
                    }
                }
            }
        }
    }
}

/// The latest decisions, newest first.
pub(super) fn decisions(list: &[Seen]) -> Markup {
    html! {
        @if list.is_empty() { p.empty { "No decisions on this replica yet." } }
        @else {
            table.decisions {
                tr { th { "When" } th { "Decision" } th { "By" } th { "Request" } th { "Sandbox" } }
                @for d in list {
                    tr.decision {
                        td { (d.time) }
                        td { (opt(&d.outcome)) " " (opt(&d.scope)) }
                        td.by { (opt(&d.by)) }
                        td { code { (opt(&d.method)) " " (opt(&d.host)) ":" (d.port.unwrap_or_default()) (opt(&d.path)) } }
                        td { code { (opt(&d.sandbox)) } }
                    }
                }
            }
        }
    }
}

/// The sandboxes page: the live sandboxes and each one's latest refusals.
pub(super) fn sandboxes(viewer: &Viewer<'_>, note: Option<&str>, list: Markup) -> Markup {
    page(
        "Sandboxes",
        Some(viewer),
        html! {
            @if let Some(n) = note { p.notice id="notice" { (n) } }
            h1 { "Sandboxes" }
            section id="sandboxes" data-live="sandboxes" { (list) }
        },
    )
}

/// The sandboxes, with a revoke button for run-time ones when `revoke` (the viewer, who may) is given, and the
/// latest refusals of each (`refusals` per sandbox id).
pub(super) fn sandbox_list(
    list: &[Value],
    revoke: Option<&Viewer<'_>>,
    refusals: &dyn Fn(&str) -> Vec<Seen>,
) -> Markup {
    html! {
        @if list.is_empty() { p.empty { "No sandboxes." } }
        @else {
            table.sandboxes {
                tr { th { "Sandbox" } th { "User" } th { "Policy" } th { "Open" } th { "Model spend" } th { "Expires" } th { "State" } th {} }
                @for s in list {
                    @let id = text(s, "id");
                    @let revoked = !s.get("revoked_at").is_none_or(Value::is_null);
                    tr.sandbox data-sandbox=(id) {
                        td { code { (id) } }
                        td { (text(s, "user")) }
                        td { (s.get("policy").and_then(Value::as_str).unwrap_or("(inline)")) }
                        td { (s.get("open_connections").and_then(Value::as_u64).unwrap_or_default()) " connections, "
                             (s.get("open_tunnels").and_then(Value::as_u64).unwrap_or_default()) " tunnels" }
                        td.spend {
                            @if let Some(m) = s.get("model_spend").filter(|m| m.is_object()) {
                                (m["input_tokens"].as_u64().unwrap_or_default() + m["output_tokens"].as_u64().unwrap_or_default())
                                " tokens in " (m["calls"].as_u64().unwrap_or_default()) " calls, cost "
                                (m["cost"].as_f64().unwrap_or_default())
                            } @else { "none" }
                        }
                        td { (s.get("expires_at").and_then(Value::as_str).unwrap_or("never (declared)")) }
                        td { @if revoked { "revoked" } @else { (s.get("violation").and_then(Value::as_str).unwrap_or("live")) } }
                        td {
                            @if let (Some(v), "api", false) = (revoke, text(s, "origin"), revoked) {
                                form.inline method="post" action={ (v.base) "sandboxes/" (id) "/revoke" } {
                                    input type="hidden" name="csrf" value=(v.csrf);
                                    button.deny type="submit" { "Revoke" }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Latest refusals" }
            @let any = list.iter().any(|s| !refusals(text(s, "id")).is_empty());
            @if !any { p.empty { "No refusals recorded on this replica." } }
            @for s in list {
                @let id = text(s, "id");
                @let seen = refusals(id);
                @if !seen.is_empty() {
                    h3 { code { (id) } }
                    table.refusals data-sandbox=(id) {
                        tr { th { "When" } th { "Reason" } th { "Status" } th { "Request" } }
                        @for r in &seen {
                            tr {
                                td { (r.time) }
                                td { code { (opt(&r.reason)) } }
                                td { (r.status.map(|s| s.to_string()).unwrap_or_default()) }
                                td { code { (opt(&r.method)) " " (opt(&r.host)) @if let Some(p) = r.port { ":" (p) } (opt(&r.path)) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The sign-in page: the provider's button (when configured), and a token form.
pub(super) fn sign_in(provider: Option<(&str, bool)>, form: &str, problem: Option<&str>) -> Markup {
    page(
        "Sign in",
        None,
        html! {
            h1 { "Sign in to cordon" }
            @if let Some(p) = problem { p.error id="problem" { (p) } }
            @if let Some((issuer, ready)) = provider {
                section.signin {
                    @if ready {
                        a.button id="sign-in-oidc" href="/console/login/oidc" { "Sign in with " (issuer) }
                    } @else {
                        p.error { "The identity provider " (issuer) " has not answered yet; cordon keeps asking. Sign in with a token meanwhile." }
                    }
                }
            }
            section.signin {
                h2 { "With an admin token" }
                form method="post" action="/console/login/token" {
                    input type="hidden" name="csrf" value=(form);
                    label for="token" { "Token (control.admin_token or an admin_tokens entry)" }
                    input type="password" id="token" name="token" autocomplete="off" required;
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

/// The step between the provider and the console: a same-site page that moves on to the inbox at `base`, so
/// that the `SameSite=Strict` session cookie goes along (a redirect from the provider's site would not carry it).
pub(super) fn signed_in(name: &str, base: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content={ "0;url=" (base) };
                title { "cordon · signed in" }
                link rel="stylesheet" href="/console/static/style.css";
            }
            body { main { p { "Signed in as " (name) ". " a href=(base) { "Continue to the inbox" } } } }
        }
    }
}

/// The confirmation an `always` decision needs.
pub(super) fn confirm_always(viewer: &Viewer<'_>, id: &str, p: &Value) -> Markup {
    page(
        "Allow always?",
        Some(viewer),
        html! {
            h1 { "Allow always?" }
            p {
                "Every later " strong { (text(p, "method")) } " request of sandbox " code { (text(p, "sandbox")) }
                " to " code { (text(p, "host")) ":" (p.get("port").and_then(Value::as_u64).unwrap_or_default()) (text(p, "path")) }
                ", whatever its query and body, will pass without asking, as long as this sandbox and rule "
                (p.get("rule").and_then(Value::as_u64).unwrap_or_default()) " of policy " (text(p, "policy")) " last."
            }
            form.decide method="post" action={ (viewer.base) "approvals/" (id) } {
                input type="hidden" name="csrf" value=(viewer.csrf);
                input type="hidden" name="confirm" value="yes";
                button.allow type="submit" name="act" value="allow_always" id="confirm-always" { "Yes, allow always" }
                a.button href=(viewer.base) { "Cancel" }
            }
        },
    )
}

/// An error page.
pub(super) fn problem(viewer: Option<&Viewer<'_>>, title: &str, message: &str) -> Markup {
    page(
        title,
        viewer,
        html! {
            h1 { (title) }
            p.error id="problem" { (message) }
            p { a href=(viewer.map_or("/console/login", |v| v.base)) { "Back to the inbox" } }
        },
    )
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
