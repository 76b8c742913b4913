//! Allow rules and their patterns, validated once at load.
//!
//! Host patterns are matched with globset on a representation where each DNS label is a path component
//! (`a.b.github.com` -> `a/b/github/com`) and `*` is built with `literal_separator`, so a `*` can never
//! cross a dot. A pattern is either an exact name or `*.suffix`, which means one or more whole labels
//! under `suffix` and never `suffix` itself.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use http::Method;
use ipnet::IpNet;

/// Ports a rule allows when it names none.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// A validated host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// Exactly this normalised name.
    Exact(String),
    /// One or more labels under this suffix (the suffix itself excluded).
    Subdomains(String),
}

impl HostPattern {
    /// Validate what a user wrote in `host:`; the error says what would be right.
    pub fn parse(raw: &str) -> Result<HostPattern, String> {
        let lowered = raw.trim().to_ascii_lowercase();
        if !raw.is_ascii() {
            return Err(format!(
                "{raw:?} is not ASCII; write the name in its punycode form (labels starting with xn--)"
            ));
        }
        if lowered.is_empty() {
            return Err("the host is empty; write a name like \"api.example.com\"".into());
        }
        if lowered == "*" || lowered == "*." || lowered == "**" {
            return Err(format!(
                "{raw:?} would allow every host; cordon is default-deny, so name the hosts (\"*.example.com\" allows every name under example.com)"
            ));
        }
        let name = lowered.strip_suffix('.').unwrap_or(&lowered);
        if name.parse::<std::net::IpAddr>().is_ok() || name.starts_with('[') {
            return Err(format!(
                "{raw:?} is an IP address; write it under `cidrs:` instead (e.g. cidrs: [\"{}/32\"])",
                name.trim_matches(['[', ']'])
            ));
        }
        let (wild, suffix) = match name.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, name),
        };
        if suffix.contains('*') {
            return Err(if !wild && name.starts_with('*') {
                format!(
                    "{raw:?}: a wildcard must be a whole label; write \"*.{}\" for names under it, or the exact name",
                    name.trim_start_matches('*').trim_start_matches('.')
                )
            } else {
                format!(
                    "{raw:?}: a wildcard may only be the whole first label, as in \"*.example.com\"; list the names in the middle explicitly"
                )
            });
        }
        check_labels(raw, suffix)?;
        Ok(if wild {
            HostPattern::Subdomains(suffix.to_string())
        } else {
            HostPattern::Exact(suffix.to_string())
        })
    }

    /// How specific the pattern is, to order patterns that match a common name (such patterns always nest): an
    /// exact name above every `*.suffix` it lies under, a longer suffix above a shorter one.
    pub(crate) fn specificity(&self) -> (usize, bool) {
        match self {
            HostPattern::Exact(name) => (name.split('.').count(), true),
            HostPattern::Subdomains(suffix) => (suffix.split('.').count(), false),
        }
    }

    /// The glob in label-as-component form.
    fn glob(&self) -> Result<Glob, globset::Error> {
        let text = match self {
            HostPattern::Exact(name) => labels_as_path(name),
            // `*/**/suffix`: one label, then zero or more further labels, then the suffix.
            HostPattern::Subdomains(suffix) => format!("*/**/{}", labels_as_path(suffix)),
        };
        GlobBuilder::new(&text).literal_separator(true).build()
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostPattern::Exact(n) => f.write_str(n),
            HostPattern::Subdomains(s) => write!(f, "*.{s}"),
        }
    }
}

fn check_labels(raw: &str, name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err(format!("{raw:?} is longer than 253 characters"));
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(format!(
                "{raw:?} has an empty label (two dots in a row, or a leading dot)"
            ));
        }
        if label.len() > 63 {
            return Err(format!("{raw:?} has a label longer than 63 characters"));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "{raw:?} contains {c:?}; a host name has only letters, digits, '-' and '_' between dots"
            ));
        }
    }
    Ok(())
}

/// `a.b.c` -> `a/b/c`: labels become path components so `*` cannot cross a dot.
pub(crate) fn labels_as_path(name: &str) -> String {
    name.replace('.', "/")
}

/// Parse and check a port as written in `ports:`.
pub(crate) fn parse_port(n: i64) -> Result<u16, String> {
    u16::try_from(n)
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("{n} is not a port; ports run from 1 to 65535"))
}

/// The methods cordon knows by name: RFC 9110's (CONNECT aside), PATCH (RFC 5789), QUERY, WebDAV's and
/// CalDAV's, and PURGE (caches).
pub(crate) const KNOWN_METHODS: &[&str] = &[
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "OPTIONS",
    "TRACE",
    "PATCH",
    "QUERY",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
    "REPORT",
    "SEARCH",
    "MKCALENDAR",
    "PURGE",
];

/// A method as written in a rule: an RFC 9110 token, case-sensitive. A known method in the wrong case, or a
/// name one letter away from a known one (`GETT`, `DELTE`), is refused as the typo it almost surely is; another
/// unknown name is accepted (extension methods exist) with a warning, returned beside it.
pub(crate) fn parse_method_checked(raw: &str) -> Result<(Method, Option<String>), String> {
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if raw.is_empty() || !raw.bytes().all(tchar) {
        return Err(format!(
            "{raw:?} is not an HTTP method (a token of letters, digits and !#$%&'*+-.^_`|~); write e.g. GET, POST"
        ));
    }
    if raw.eq_ignore_ascii_case("CONNECT") {
        return Err("CONNECT is not a method a rule can allow: a rule with a host already allows tunnels to it".into());
    }
    let upper = raw.to_ascii_uppercase();
    if let Some(known) = KNOWN_METHODS.iter().find(|k| **k == upper) {
        if *known != raw {
            return Err(format!("{raw:?}: methods are case-sensitive (RFC 9110); write {known}"));
        }
    } else if let Some(near) = KNOWN_METHODS.iter().find(|k| strsim::osa_distance(k, &upper) == 1) {
        return Err(format!("{raw:?} is not a method cordon knows; did you mean {near}?"));
    }
    let method = Method::from_bytes(raw.as_bytes()).map_err(|_| format!("{raw:?} is not an HTTP method"))?;
    let warning = (!KNOWN_METHODS.contains(&raw)).then(|| {
        format!("{raw:?} is not a method cordon knows (an extension method?); it is allowed as written, case and all")
    });
    Ok((method, warning))
}

/// Compile path globs: `*` stays within one segment, `**` spans segments.
pub(crate) fn compile_paths(raw: &[String]) -> Result<GlobSet, (usize, String)> {
    let mut set = GlobSetBuilder::new();
    for (i, p) in raw.iter().enumerate() {
        if !p.starts_with('/') {
            return Err((i, format!("{p:?} must start with '/', e.g. \"/v1/**\"")));
        }
        let glob = GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| (i, format!("{p:?} is not a valid glob: {}", e.kind())))?;
        set.add(glob);
    }
    set.build()
        .map_err(|e| (0, format!("the path globs do not compile: {e}")))
}

/// One validated allow rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Host pattern (or `None` for a CIDR rule).
    pub host: Option<HostPattern>,
    /// IP-literal destinations this rule allows.
    pub cidrs: Vec<IpNet>,
    /// Allowed ports.
    pub ports: Vec<u16>,
    /// Allowed methods, `None` = any.
    pub methods: Option<Vec<Method>>,
    /// Allowed path globs, `None` = any.
    pub paths: Option<GlobSet>,
    /// The path globs as written, for explanations.
    pub path_texts: Vec<String>,
    /// Whether HTTPS to this rule is intercepted or tunnelled.
    pub tls: TlsMode,
    /// Whether a request it allows goes at once or waits for a human.
    pub action: Action,
    /// For an MCP endpoint: the tools and methods its sandboxes may call (`mcp:`).
    pub mcp: Option<std::sync::Arc<super::mcp::McpRules>>,
    /// For a GraphQL endpoint: the operations its sandboxes may send (`graphql:`).
    pub graphql: Option<std::sync::Arc<super::graphql::GraphqlRules>>,
    /// For a model API: its dialect, and the models its sandboxes may name (`model_api:`).
    pub model_api: Option<std::sync::Arc<super::model_api::ModelApiRules>>,
}

impl Rule {
    /// A digest of everything the rule says, to tell whether a later configuration still has the same rule
    /// (a standing approval grant holds only while the rule it was given under does).
    pub(crate) fn fingerprint(&self) -> String {
        let said = format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}{}{}",
            self.host,
            self.cidrs,
            self.ports,
            self.methods,
            self.path_texts,
            self.tls,
            self.action,
            self.mcp.as_ref().map(|m| m.said()),
            // Only when there is one, so the rules written before keep their fingerprints (and grants).
            self.graphql
                .as_ref()
                .map(|g| format!("|graphql {}", g.said()))
                .unwrap_or_default(),
            self.model_api
                .as_ref()
                .map(|m| format!("|model_api {}", m.said()))
                .unwrap_or_default()
        );
        hex::encode(ring::digest::digest(&ring::digest::SHA256, said.as_bytes()))
    }
}

/// What a rule does with a request it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Let it through (the default).
    #[default]
    Allow,
    /// Hold it until a human allows or denies it through the admin API (or the approval times out).
    Ask,
}

/// What cordon does with TLS after a CONNECT that a rule allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Terminate TLS with the sandbox's CA and police every request inside (the default).
    #[default]
    Intercept,
    /// Pass the bytes through untouched (for clients that pin certificates); the SNI must match.
    Tunnel,
}

impl TlsMode {
    /// The name used in config, audit and metrics.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TlsMode::Intercept => "intercept",
            TlsMode::Tunnel => "tunnel",
        }
    }
}

/// A matcher for a list of host patterns (the same semantics as policy rules), for credential bindings.
pub(crate) fn host_set(patterns: &[HostPattern]) -> Result<GlobSet, globset::Error> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(p.glob()?);
    }
    set.build()
}

/// Whether `host` (a normalised name) matches a set built by [`host_set`] or [`compile_hosts`].
pub(crate) fn host_matches(set: &GlobSet, host: &str) -> bool {
    set.is_match(labels_as_path(host))
}

/// The glob matcher of a policy's hosts that [`super::hosts::HostIndex`] replaced, kept to hold the index to
/// the same answers (a property test): the set and, for each glob, the rule it belongs to.
#[cfg(test)]
pub(crate) fn compile_hosts(rules: &[Rule]) -> Result<(GlobSet, Vec<usize>), globset::Error> {
    let mut set = GlobSetBuilder::new();
    let mut owners = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        if let Some(pattern) = &rule.host {
            set.add(pattern.glob()?);
            owners.push(i);
        }
    }
    Ok((set.build()?, owners))
}

#[cfg(test)]
#[path = "allowlist_tests.rs"]
mod tests;
