//! The Admin API reference page, `docs/src/reference/admin-api.md`, is made from `docs/openapi.yaml`: every path
//! and method with what it does, whether it needs a token, its parameters, request body and answers, then every
//! error code with the statuses and calls that answer it. The committed page must be what this renders;
//! `CORDON_BLESS=1 cargo test --test it -- book::admin_api` writes it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde_yaml_ng::Value;

use crate::repo::openapi::{document as spec, resolve};

const PAGE: &str = "docs/src/reference/admin-api.md";
const SPEC: &str = "docs/openapi.yaml";
const METHODS: [&str; 5] = ["get", "put", "post", "patch", "delete"];

/// The hand-written start of the page; the rest comes from the specification.
const INTRO: &str = "\
# Admin API

<!-- Made from docs/openapi.yaml by tests/it/book/admin_api.rs: edit those, not this page, then run
     CORDON_BLESS=1 cargo test --test it -- book::admin_api -->

The admin API creates and revokes run-time sandboxes, hands out their credentials, decides requests held for
approval and reloads the configuration. Its base URL is the admin listener's, `listen.admin`:
`http://127.0.0.1:9090` in the default configuration, `https://HOST:PORT` with `admin.tls` (for the Kubernetes
gateway, `https://cordon-gateway-admin.cordon.svc:9090`); the paths below are relative to it. The complete,
machine-readable description, with every schema, is the OpenAPI 3 document `docs/openapi.yaml` in the
repository, from which this page is made. The `cordon sandbox`, `cordon approvals` and `cordon ca` commands
call it for you ([Command line](cli.md)).

Calls under `/v1` authenticate with an admin token, `Authorization: Bearer <token>`: `control.admin_token` (the
principal `admin`, role `admin`, which may do everything; the default configuration makes it on first start, in
`state/admin-token` under cordon's state folder, `~/.local/state/cordon` or `/var/lib/cordon` for root) or a named
entry of `control.admin_tokens` with the roles it is given ([Roles](#roles)). People who sign in through
OpenID Connect do so in the console, which makes these same calls with the roles their provider's groups give
them; the API itself takes bearer tokens only ([People: roles, sign-in, the console](../admin-access.md)).

```sh
curl -sS -H \"Authorization: Bearer $(cat ~/.local/state/cordon/state/admin-token)\" http://127.0.0.1:9090/v1/sandboxes
```
";

/// A string field of a node, or "".
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The entries of a mapping field (none when it is absent).
fn entries<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = (&'a str, &'a Value)> {
    let map = v.get(key).and_then(Value::as_mapping).into_iter().flatten();
    map.map(|(k, v)| {
        (
            k.as_str()
                .unwrap_or_else(|| panic!("{SPEC}: a key that is no string: {k:?}")),
            v,
        )
    })
}

/// Whether a field is `true`.
fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool) == Some(true)
}

/// Text for one table cell: on one line, pipes escaped.
fn cell(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

/// How a schema is named on the page: its component's name, the names of its alternatives, or its type.
fn schema_name(schema: &Value) -> String {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return format!("`{}`", r.rsplit('/').next().unwrap_or(r));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = schema.get(key).and_then(Value::as_sequence) {
            return alts.iter().map(schema_name).collect::<Vec<_>>().join(" or ");
        }
    }
    format!("`{}`", schema.get("type").and_then(Value::as_str).unwrap_or("any"))
}

/// The bodies a request or response carries: each media type's schema, the media type named unless JSON.
fn bodies(v: &Value) -> String {
    let names = entries(v, "content").map(|(media, m)| {
        let name = m.get("schema").map(schema_name).unwrap_or_default();
        if media == "application/json" {
            name
        } else {
            format!("{name} (`{media}`)")
        }
    });
    names.collect::<Vec<_>>().join(", ")
}

/// The error codes a response schema can carry: the `enum` of its `error.code`, through refs and combinators.
fn codes(doc: &Value, schema: &Value, out: &mut BTreeSet<String>) {
    let schema = resolve(doc, schema);
    for key in ["oneOf", "anyOf", "allOf"] {
        for alt in schema.get(key).and_then(Value::as_sequence).into_iter().flatten() {
            codes(doc, alt, out);
        }
    }
    let path = ["properties", "error", "properties", "code", "enum"];
    let code = path.iter().try_fold(schema, |node, key| node.get(*key));
    out.extend(
        code.and_then(Value::as_sequence)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from),
    );
}

/// One operation of the specification.
struct Operation<'a> {
    /// `GET`, `POST`, ...
    method: String,
    path: &'a str,
    op: &'a Value,
    /// The parameters of its path item, then its own.
    params: Vec<&'a Value>,
    /// Whether it needs the admin token (`security: []` opens it).
    token: bool,
}

/// An operation as the page writes it: `METHOD /path`, in backquotes.
fn call(o: &Operation) -> String {
    format!("`{} {}`", o.method, o.path)
}

/// Every operation, in the order of the specification.
fn operations(doc: &Value) -> Vec<Operation<'_>> {
    let mut ops = Vec::new();
    for (path, item) in entries(doc, "paths") {
        for (method, op) in METHODS.iter().filter_map(|m| Some((m, item.get(*m)?))) {
            let lists = [item.get("parameters"), op.get("parameters")].into_iter().flatten();
            let params = lists
                .filter_map(Value::as_sequence)
                .flatten()
                .map(|p| resolve(doc, p))
                .collect();
            let security = op.get("security").and_then(Value::as_sequence);
            let token = security.is_none_or(|s| !s.is_empty());
            ops.push(Operation {
                method: method.to_uppercase(),
                path,
                op,
                params,
                token,
            });
        }
    }
    ops
}

/// The section of one operation.
fn render_operation(doc: &Value, o: &Operation, page: &mut String) {
    let (op, anchor) = (o.op, text(o.op, "operationId"));
    let auth = if o.token {
        "Needs an admin token (`Authorization: Bearer`)."
    } else {
        "Open: no token."
    };
    let summary = text(op, "summary").trim_end_matches('.');
    let _ = write!(
        page,
        "<a id=\"{anchor}\"></a>\n\n### {}\n\n**{summary}.** {auth}\n\n",
        call(o)
    );
    let description = text(op, "description").trim();
    if !description.is_empty() {
        let _ = write!(page, "{description}\n\n");
    }
    if !o.params.is_empty() {
        page.push_str("| parameter | in | required | type | description |\n| --- | --- | --- | --- | --- |\n");
        for p in &o.params {
            let required = if flag(p, "required") { "yes" } else { "no" };
            let (name, place, description) = (text(p, "name"), text(p, "in"), cell(text(p, "description")));
            let schema = p.get("schema").map(schema_name).unwrap_or_default();
            let _ = writeln!(page, "| `{name}` | {place} | {required} | {schema} | {description} |");
        }
        page.push('\n');
    }
    if let Some(body) = op.get("requestBody").map(|b| resolve(doc, b)) {
        let required = if flag(body, "required") { "required" } else { "optional" };
        let _ = write!(page, "Request body ({required}): {}.\n\n", bodies(body));
        let json = body.get("content").and_then(|c| c.get("application/json"));
        if let Some(example) = json.and_then(|m| m.get("example")) {
            let example = serde_json::to_string_pretty(example).expect("an example is JSON");
            let _ = write!(page, "Example:\n\n```json\n{example}\n```\n\n");
        }
    }
    page.push_str("| status | meaning | body |\n| --- | --- | --- |\n");
    let mut rows: Vec<(&str, &Value)> = entries(op, "responses").map(|(s, r)| (s, resolve(doc, r))).collect();
    rows.sort_by_key(|(status, _)| *status);
    for (status, r) in rows {
        let headers: Vec<String> = entries(r, "headers").map(|(h, _)| format!("`{h}`")).collect();
        let sets = if headers.is_empty() {
            String::new()
        } else {
            format!(" Sets {}.", headers.join(", "))
        };
        let _ = writeln!(
            page,
            "| {status} | {}{sets} | {} |",
            cell(text(r, "description")),
            bodies(r)
        );
    }
    page.push('\n');
}

/// The table of error codes: each with the statuses that carry it and the calls that answer it.
fn render_codes(doc: &Value, ops: &[Operation], page: &mut String) {
    let mut table: BTreeMap<String, (BTreeSet<&str>, Vec<String>)> = BTreeMap::new();
    for o in ops {
        let call = call(o);
        for (status, r) in entries(o.op, "responses") {
            let mut found = BTreeSet::new();
            for (_, media) in entries(resolve(doc, r), "content") {
                if let Some(schema) = media.get("schema") {
                    codes(doc, schema, &mut found);
                }
            }
            for code in found {
                let (statuses, calls) = table.entry(code).or_default();
                statuses.insert(status);
                if !calls.contains(&call) {
                    calls.push(call.clone());
                }
            }
        }
    }
    let every: Vec<String> = ops.iter().filter(|o| o.token).map(call).collect();
    page.push_str(
        "## Error codes\n\nThe `code` of each error answer, with the statuses it comes with and the calls that \
         answer it (their rows above say when). Besides these, any call may get an answer of \
         [Rules every call follows](#rules-every-call-follows): `admin_needs_tls`, `client_certificate_required`, \
         `method_not_allowed`, or `not_found` for a path that is no endpoint.\n\n\
         | code | status | answered by |\n| --- | --- | --- |\n",
    );
    for (code, (statuses, calls)) in &table {
        let by = if *calls == every {
            "every `/v1` call".to_string()
        } else {
            calls.join(", ")
        };
        let statuses = statuses.iter().copied().collect::<Vec<_>>().join(", ");
        let _ = writeln!(page, "| `{code}` | {statuses} | {} |", cell(&by));
    }
}

/// The whole page.
fn render(doc: &Value) -> String {
    let mut page = String::from(INTRO);
    // The description's rules: all of it but its first paragraph (what the API is, said above) and the one
    // on how the file itself is checked.
    let info = text(doc.get("info").expect("an info section"), "description");
    let rules: Vec<&str> = info
        .trim()
        .split("\n\n")
        .skip(1)
        .filter(|p| !p.contains("this file"))
        .collect();
    let _ = write!(page, "\n## Rules every call follows\n\n{}\n", rules.join("\n\n"));
    let schemes = doc.get("components").and_then(|c| c.get("securitySchemes"));
    let bearer = schemes
        .and_then(|s| s.get("bearerAuth"))
        .expect("components.securitySchemes.bearerAuth");
    let _ = write!(
        page,
        "\n## Roles\n\n{}\n",
        text(resolve(doc, bearer), "description").trim()
    );

    let ops = operations(doc);
    page.push_str("\n## Endpoints\n\n| call | what it does | token |\n| --- | --- | --- |\n");
    for o in &ops {
        let (summary, anchor) = (cell(text(o.op, "summary")), text(o.op, "operationId"));
        let token = if o.token { "admin token" } else { "none" };
        let _ = writeln!(page, "| [{}](#{anchor}) | {summary} | {token} |", call(o));
    }
    page.push('\n');
    for tag in doc.get("tags").and_then(Value::as_sequence).expect("a `tags` list") {
        let name = text(tag, "name");
        let title = name.get(..1).unwrap_or("").to_uppercase() + name.get(1..).unwrap_or("");
        let _ = write!(page, "## {title}\n\n{}\n\n", text(tag, "description").trim());
        for o in &ops {
            let tags = o.op.get("tags").and_then(Value::as_sequence).into_iter().flatten();
            if tags.filter_map(Value::as_str).any(|t| t == name) {
                render_operation(doc, o, &mut page);
            }
        }
    }
    render_codes(doc, &ops, &mut page);
    page
}

#[test]
fn the_admin_api_page_is_made_from_the_openapi_document() {
    let want = render(&spec());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PAGE);
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want && std::env::var_os("CORDON_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("cannot write {PAGE}: {e}"));
        return;
    }
    let (old, new) = (have.lines().collect::<Vec<_>>(), want.lines().collect::<Vec<_>>());
    let at = old
        .iter()
        .zip(&new)
        .position(|(a, b)| a != b)
        .unwrap_or(old.len().min(new.len()));
    assert!(
        have == want,
        "{PAGE} is not what {SPEC} makes, from line {}:\n  committed: {:?}\n  made:      {:?}\n\
         run CORDON_BLESS=1 cargo test --test it -- book::admin_api",
        at + 1,
        old.get(at),
        new.get(at)
    );
}

#[test]
fn every_route_cordon_serves_has_its_section_with_a_row_for_each_status() {
    let doc = spec();
    let page = render(&doc);
    for (method, path) in cordon::admin::ROUTES {
        let heading = format!("### `{method} {path}`");
        let at = page
            .find(&heading)
            .unwrap_or_else(|| panic!("{PAGE} has no section {heading}"));
        let rest = &page[at + 1..];
        let end = [rest.find("\n### "), rest.find("\n## ")].into_iter().flatten().min();
        let section = &page[at..end.map_or(page.len(), |n| at + 1 + n)];
        let ops = operations(&doc);
        let o = ops
            .iter()
            .find(|o| o.method == *method && o.path == *path)
            .expect("described");
        for (status, _) in entries(o.op, "responses") {
            assert!(
                section.contains(&format!("\n| {status} | ")),
                "{heading}: no row for {status}"
            );
        }
        assert!(
            page.contains(&format!("(#{})", text(o.op, "operationId"))),
            "{heading}: not in the index"
        );
    }
}

#[test]
fn a_table_cell_stays_one_cell_on_one_line() {
    assert_eq!(cell("`a|b` or\n  c"), "`a\\|b` or c");
}
