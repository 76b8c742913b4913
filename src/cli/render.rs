//! How the command line prints the admin API's answers: a sandbox's environment in each format, tables of
//! sandboxes, approvals, grants and access requests; and how it reads `--label k=v`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::admin_client::ClientError;

/// Parse `--label k=v` (clap value_parser fn): error text says what is wrong.
pub(crate) fn parse_label(s: &str) -> Result<(String, String), String> {
    let Some((key, value)) = s.split_once('=') else {
        return Err(format!("expected KEY=VALUE, got {s:?} (no '=')"));
    };
    if key.is_empty() {
        return Err(format!("the label key is empty in {s:?}"));
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("the label key {key:?} contains whitespace"));
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// Output formats for an env map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum EnvFormat {
    /// `export NAME='value'` lines, for `eval` in a POSIX shell.
    Export,
    /// `NAME="value"` lines, for a `.env` file.
    Dotenv,
    /// A JSON object.
    Json,
}

/// Render the `env` object of a Created answer, sorted by name and ending with a newline: Export →
/// `export NAME='value'` lines with POSIX single-quote escaping (a `'` inside becomes `'\''`); Dotenv →
/// `NAME="value"` with `\\ \" \n \$` escaped; Json → a pretty JSON object. Errors if `env` is missing, a value is not
/// a string, or a name is not a valid environment variable name (so the output is always safe to `eval`).
pub(crate) fn render_env(created: &Value, format: EnvFormat) -> Result<String, ClientError> {
    let Some(env) = created.get("env").and_then(Value::as_object) else {
        return Err(ClientError::BadResponse("the answer has no \"env\" object".to_owned()));
    };
    let mut vars = BTreeMap::new();
    for (name, value) in env {
        let problem = match value.as_str() {
            Some(_) if !is_env_name(name) => "is not a valid variable name",
            Some(value) => {
                vars.insert(name.as_str(), value);
                continue;
            }
            None => "has a value that is not a string",
        };
        return Err(ClientError::BadResponse(format!("env {name:?} {problem}")));
    }
    let mut out = String::new();
    match format {
        EnvFormat::Export => {
            for (name, value) in &vars {
                out.push_str(&format!("export {name}='{}'\n", value.replace('\'', r"'\''")));
            }
        }
        EnvFormat::Dotenv => {
            for (name, value) in &vars {
                out.push_str(&format!("{name}=\"{}\"\n", dotenv_escape(value)));
            }
        }
        EnvFormat::Json => {
            out = serde_json::to_string_pretty(&vars).map_err(|e| ClientError::BadResponse(e.to_string()))?;
            out.push('\n');
        }
    }
    Ok(out)
}

/// Whether `name` is `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Escapes `\`, `"`, newline and `$` for a double-quoted dotenv value.
fn dotenv_escape(value: &str) -> String {
    let escaped = value.replace('\\', r"\\").replace('"', r#"\""#);
    escaped.replace('\n', r"\n").replace('$', r"\$")
}

/// A person-readable table for `list` (ID, USER, POLICY, ORIGIN, EXPIRES, OPEN) — columns aligned. EXPIRES is
/// `revoked` for a revoked sandbox and `never` without an expiry; OPEN counts connections plus tunnels. Accepts the
/// `{"sandboxes":[...]}` answer or a bare array.
pub(crate) fn render_table(list: &Value) -> String {
    let items = list.get("sandboxes").unwrap_or(list).as_array();
    let mut rows = vec![heading(&["ID", "USER", "POLICY", "ORIGIN", "EXPIRES", "OPEN"])];
    for item in items.into_iter().flatten() {
        let expires = match (item.get("revoked_at"), item.get("expires_at").and_then(Value::as_str)) {
            (Some(revoked), _) if !revoked.is_null() => "revoked".to_owned(),
            (_, expires) => clean(expires.unwrap_or("never")),
        };
        let count = |key: &str| item.get(key).and_then(Value::as_u64).unwrap_or(0);
        let open = count("open_connections").saturating_add(count("open_tunnels"));
        let [id, user, policy, origin] = ["id", "user", "policy", "origin"].map(|key| cell(item, key));
        rows.push(vec![id, user, policy, origin, expires, open.to_string()]);
    }
    align(&rows)
}

/// The longest excerpt shown in [`render_approvals`], in characters.
const EXCERPT_WIDTH: usize = 40;

/// A person-readable table for `approvals list` (ID, SANDBOX, USER, METHOD, URL, EXPIRES, EXCERPT): URL is
/// `host:port/path`, EXCERPT the MCP tools or GraphQL operations asked for when there are some, else the body's
/// start, cut to 40 characters (ending in `…` when cut; `-` when empty). Accepts the
/// `{"pending":[...]}` answer or a bare array.
pub(crate) fn render_approvals(list: &Value) -> String {
    let items = list.get("pending").unwrap_or(list).as_array();
    let mut rows = vec![heading(&[
        "ID", "SANDBOX", "USER", "METHOD", "URL", "EXPIRES", "EXCERPT",
    ])];
    for item in items.into_iter().flatten() {
        let mut row = ["id", "sandbox", "user", "method"].map(|key| cell(item, key)).to_vec();
        let asked = ["tools", "operations"]
            .iter()
            .filter_map(|k| item.get(*k).and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("; ");
        let excerpt = if asked.is_empty() {
            item.get("excerpt")
                .and_then(Value::as_str)
                .map_or_else(String::new, clean)
        } else {
            clean(&asked)
        };
        let excerpt = match excerpt.chars().count() {
            0 => "-".to_owned(),
            n if n > EXCERPT_WIDTH => format!("{}…", excerpt.chars().take(EXCERPT_WIDTH - 1).collect::<String>()),
            _ => excerpt,
        };
        row.extend([url(item), cell(item, "expires_at"), excerpt]);
        rows.push(row);
    }
    align(&rows)
}

/// A person-readable table for `approvals grants` (ID, SANDBOX, REACH, METHOD, URL, BODY, BY, AT, APPROVAL). Accepts the
/// `{"grants":[...]}` answer or a bare array.
pub(crate) fn render_grants(list: &Value) -> String {
    let items = list.get("grants").unwrap_or(list).as_array();
    let mut rows = vec![heading(&[
        "ID", "SANDBOX", "REACH", "METHOD", "URL", "BODY", "BY", "AT", "APPROVAL",
    ])];
    for item in items.into_iter().flatten() {
        let [id, sandbox, reach, method, by, at, approval] =
            ["id", "sandbox", "reach", "method", "by", "at", "approval"].map(|key| cell(item, key));
        let body = match item.get("body_sha256").and_then(Value::as_str) {
            Some(sha) => format!("sha256:{}", clean(&sha.chars().take(12).collect::<String>())),
            None => "any".to_owned(),
        };
        rows.push(vec![id, sandbox, reach, method, url(item), body, by, at, approval]);
    }
    align(&rows)
}

/// A table of access requests (`{"requests": [...]}`): id, sandbox, state, what each would add, whether it
/// reaches a credential, the reason the sandbox gave, and when a grant ends.
pub(crate) fn render_access(list: &Value) -> String {
    let items = list.get("requests").unwrap_or(list).as_array();
    let mut rows = vec![heading(&[
        "ID",
        "SANDBOX",
        "POLICY",
        "STATE",
        "ADDS",
        "CREDENTIALS",
        "REASON",
        "UNTIL",
    ])];
    for item in items.into_iter().flatten() {
        let [id, sandbox, policy, state, reason, until] =
            ["id", "sandbox", "policy", "state", "reason", "expires_at"].map(|key| cell(item, key));
        let adds: Vec<String> = item["adds"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| match a.get("example").and_then(Value::as_str) {
                Some(e) => format!("{}: {}", cell(a, "kind"), clean(e)),
                None => cell(a, "kind"),
            })
            .collect();
        let reaches = if item["reaches_credentials"].as_bool() == Some(true) {
            "may reach"
        } else {
            "none"
        };
        rows.push(vec![
            id,
            sandbox,
            policy,
            state,
            adds.join("; "),
            reaches.to_owned(),
            reason,
            until,
        ]);
    }
    align(&rows)
}

/// The URL of an approval (as cordon shows it, with its query), or `host:port/path` (and `?query` for an
/// `exact` grant) of a grant; an IPv6 host in brackets.
fn url(item: &Value) -> String {
    if let Some(url) = item.get("url").and_then(Value::as_str) {
        return clean(url);
    }
    let host = cell(item, "host");
    let host = if host.contains(':') { format!("[{host}]") } else { host };
    let path = item.get("path").and_then(Value::as_str).map_or_else(String::new, clean);
    let query = item
        .get("query")
        .and_then(Value::as_str)
        .map_or_else(String::new, |q| format!("?{}", clean(q)));
    format!("{host}:{}{path}{query}", cell(item, "port"))
}

/// A table's heading row.
fn heading(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// The rows as aligned columns separated by two spaces, without trailing spaces, each line ending with a newline.
/// Columns are as wide as their widest cell on a terminal (East Asian wide characters take two columns,
/// combining marks none), so the columns line up however the cells are written.
pub(super) fn align(rows: &[Vec<String>]) -> String {
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::NOTHING)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled);
    for row in rows {
        table.add_row(row.clone());
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The text of `item[key]` for a table cell: `-` when missing or null.
fn cell(item: &Value, key: &str) -> String {
    match item.get(key) {
        None | Some(Value::Null) => "-".to_owned(),
        Some(other) => clean(&text(other)),
    }
}

/// A string's contents, or any other value as JSON.
fn text(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// Escapes control characters and bidirectional overrides visibly (as `\u{202e}`), so that a cell can neither
/// break the table, drive the terminal, nor reorder what is read.
fn clean(text: &str) -> String {
    crate::approval::unmisleading(text)
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
