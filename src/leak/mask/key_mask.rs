//! SECURITY: key material in what an AWS destination answers is masked as it streams: the value of every
//! field that carries a secret access key, a session token or another service's token or password (XML
//! `<SecretAccessKey>…</SecretAccessKey>`, JSON `"SessionToken": "…"`, credentials-file
//! `aws_secret_access_key = …`; the field names in any case) is replaced with [`MASK`], so that the document
//! keeps its shape and a client still parses it, and the sandbox never holds keys that work without cordon.
//! Access key ids (`AKIA…`, `ASIA…`) stay: without their secret they sign nothing, and clients need them
//! to name a key (DeleteAccessKey).
//!
//! Streaming holds back only what could still become a field's opening (a tail that is the start of a field
//! name, or a name whose `:`/`=`/`>` has not arrived), and what is inside a masked value is dropped as it
//! comes, so no body is buffered whole.

use aho_corasick::{AhoCorasick, MatchKind};

/// What a masked value becomes.
pub(crate) const MASK: &[u8] = b"masked-by-cordon";

/// Field names (XML elements, JSON keys) whose values are secrets, lower case.
const FIELDS: [&str; 15] = [
    "secretaccesskey",
    "secret_access_key",
    "secretkey",
    "sessiontoken",
    "session_token",
    "authorizationtoken",
    "dbpassword",
    "servicepassword",
    "servicecredentialsecret",
    "privatekey",
    "privatekeybase64",
    "keymaterial",
    "accesstoken",
    "refreshtoken",
    "idtoken",
];

/// Credentials-file and environment names (`name = value`, `NAME=value`), lower case.
const LINES: [&str; 3] = ["aws_secret_access_key", "aws_session_token", "aws_security_token"];

/// SECURITY: the JSON keys whose values are tokens or keys in the answer to a GitHub or OAuth2 minting call
/// (installation, runner and OAuth tokens; an App's key and secrets from its manifest; a device code), lower case.
const TOKEN_FIELDS: [&str; 9] = [
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "webhook_secret",
    "pem",
    "encoded_jit_config",
    "device_code",
];

/// The same in a form-encoded answer (`access_token=...&scope=...`, as GitHub's OAuth endpoints answer).
const TOKEN_LINES: [&str; 4] = ["access_token", "refresh_token", "id_token", "device_code"];

/// Which fields a [`KeyMask`] masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fields {
    /// AWS key material and other AWS services' secrets.
    Aws,
    /// Tokens in GitHub and OAuth2 answers.
    Tokens,
}

/// The most bytes between a field's name and its value (attributes, white space) that are looked through.
const GAP: usize = 96;

/// How a value ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Term {
    /// At `</` (CDATA and all).
    Xml,
    /// At an unescaped `"`.
    Json,
    /// At white space, a quote, `;`, `,`, `&` or `<`.
    Line,
}

/// Where the stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyMaskState {
    /// Looking for a field.
    Scan,
    /// Inside a value being dropped; `escaped`: the last byte was a JSON backslash.
    Value { term: Term, escaped: bool },
}

/// The patterns, built once: `<name`, `"name"` and the credentials-file names.
struct Patterns {
    ac: AhoCorasick,
    /// Each pattern, lower case, and how its value ends.
    list: Vec<(Vec<u8>, Term)>,
}

fn patterns(fields: Fields) -> Option<&'static Patterns> {
    static AWS: std::sync::OnceLock<Option<Patterns>> = std::sync::OnceLock::new();
    static TOKENS: std::sync::OnceLock<Option<Patterns>> = std::sync::OnceLock::new();
    let (built, names, lines): (_, &[&str], &[&str]) = match fields {
        Fields::Aws => (&AWS, &FIELDS, &LINES),
        Fields::Tokens => (&TOKENS, &TOKEN_FIELDS, &TOKEN_LINES),
    };
    built
        .get_or_init(|| {
            let mut list: Vec<(Vec<u8>, Term)> = Vec::new();
            for f in names {
                if fields == Fields::Aws {
                    list.push((format!("<{f}").into_bytes(), Term::Xml));
                }
                list.push((format!("\"{f}\"").into_bytes(), Term::Json));
            }
            list.extend(lines.iter().map(|l| (l.as_bytes().to_vec(), Term::Line)));
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .ascii_case_insensitive(true)
                .build(list.iter().map(|(p, _)| p))
                .map_err(|e| tracing::error!("cannot build the AWS key masker: {e}"))
                .ok()?;
            Some(Patterns { ac, list })
        })
        .as_ref()
}

/// Whether a masker of `fields` can be had (the patterns built).
pub(crate) fn available(fields: Fields) -> bool {
    patterns(fields).is_some()
}

/// A body masked chunk by chunk.
#[derive(Debug)]
pub(crate) struct KeyMask {
    fields: Fields,
    held: Vec<u8>,
    state: KeyMaskState,
    /// The last byte let go (what precedes the held bytes: a name must not be the end of a longer word).
    prev: u8,
}

/// What follows a field's name: the value starts at `Some(offset)`, the name is no field (`None`), or more
/// bytes are needed (`Err`).
type Opening = Result<Option<usize>, ()>;

impl KeyMask {
    /// A fresh stream masking `fields`.
    pub(crate) fn of(fields: Fields) -> KeyMask {
        KeyMask {
            fields,
            held: Vec::new(),
            state: KeyMaskState::Scan,
            prev: b'\n',
        }
    }

    /// Take `data` in; what may go on now.
    pub(crate) fn push(&mut self, data: &[u8]) -> Vec<u8> {
        self.run(data, false)
    }

    /// The end: everything still held.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        self.run(&[], true)
    }

    fn run(&mut self, data: &[u8], last: bool) -> Vec<u8> {
        let out = self.step(data, last);
        if let Some(b) = out.last() {
            self.prev = *b;
        }
        out
    }

    fn step(&mut self, data: &[u8], last: bool) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.held);
        buf.extend_from_slice(data);
        let Some(p) = patterns(self.fields) else {
            return buf;
        };
        let mut out = Vec::with_capacity(buf.len());
        let mut i = 0;
        while i < buf.len() || (last && self.state != KeyMaskState::Scan) {
            match self.state {
                KeyMaskState::Value { term, escaped } => match value_end(&buf[i..], term, escaped) {
                    Ok(end) => {
                        out.extend_from_slice(MASK);
                        self.state = KeyMaskState::Scan;
                        i += end;
                    }
                    Err((escaped, keep)) if !last => {
                        self.state = KeyMaskState::Value { term, escaped };
                        self.held = buf[buf.len() - keep..].to_vec();
                        return out;
                    }
                    Err(_) => {
                        out.extend_from_slice(MASK);
                        self.state = KeyMaskState::Scan;
                        i = buf.len();
                    }
                },
                KeyMaskState::Scan => {
                    let mut from = i;
                    loop {
                        let Some(m) = p.ac.find(&buf[from..]) else {
                            let keep = if last { 0 } else { prefix_tail(&buf[from..], &p.list) };
                            out.extend_from_slice(&buf[i..buf.len() - keep]);
                            self.held = buf[buf.len() - keep..].to_vec();
                            return out;
                        };
                        let (start, end) = (from + m.start(), from + m.end());
                        let term = p.list[m.pattern().as_usize()].1;
                        // A line name right after a quote, at the end of what came, may yet be a JSON name.
                        if term == Term::Line && start > i && buf[start - 1] == b'"' && end == buf.len() && !last {
                            out.extend_from_slice(&buf[i..start - 1]);
                            self.held = buf[start - 1..].to_vec();
                            return out;
                        }
                        let before = if start == 0 { self.prev } else { buf[start - 1] };
                        match opening(&buf[..], before, end, term, last) {
                            Ok(Some(value)) => {
                                out.extend_from_slice(&buf[i..value]);
                                self.state = KeyMaskState::Value { term, escaped: false };
                                i = value;
                                break;
                            }
                            Ok(None) => from = start + 1,
                            Err(()) => {
                                out.extend_from_slice(&buf[i..start]);
                                self.held = buf[start..].to_vec();
                                return out;
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// Where a value inside `rest` ends (its terminator stays), or, if it does not end in `rest`, the escape
/// state and how many of its last bytes to keep (a `<` that may begin `</`).
fn value_end(rest: &[u8], term: Term, mut escaped: bool) -> Result<usize, (bool, usize)> {
    for (k, &b) in rest.iter().enumerate() {
        match term {
            Term::Xml if b == b'<' => match rest.get(k + 1) {
                Some(b'/') => return Ok(k),
                Some(_) => {}
                None => return Err((false, 1)),
            },
            Term::Json if escaped => escaped = false,
            Term::Json if b == b'\\' => escaped = true,
            Term::Json if b == b'"' => return Ok(k),
            Term::Line if b.is_ascii_whitespace() || b"\"';,&<".contains(&b) => return Ok(k),
            _ => {}
        }
    }
    Err((escaped, 0))
}

/// What follows the name matched up to `end` in `buf`, the byte `before` it.
fn opening(buf: &[u8], before: u8, end: usize, term: Term, last: bool) -> Opening {
    let more = if last { Ok(None) } else { Err(()) };
    let after = &buf[end..];
    match term {
        // `<name>` or `<name attributes>`; not `<name/>` nor `<namelonger>`.
        Term::Xml => match after.first() {
            None => more,
            Some(b'>') => Ok(Some(end + 1)),
            Some(b) if b.is_ascii_whitespace() => match after.iter().take(GAP).position(|&b| b == b'>') {
                Some(k) if after[k - 1] != b'/' => Ok(Some(end + k + 1)),
                Some(_) => Ok(None),
                None if after.len() < GAP => more,
                None => Ok(None),
            },
            Some(_) => Ok(None),
        },
        // `"name"` white space `:` white space `"`.
        Term::Json => gap_then(after, end, b":", true).map_or(more, Ok),
        // A word of its own: `name`, white space, `=` (or `:`), white space, an optional quote.
        Term::Line => {
            if before.is_ascii_alphanumeric() || before == b'_' {
                return Ok(None);
            }
            gap_then(after, end, b"=:", false).map_or(more, Ok)
        }
    }
}

/// After white space, one of `separators`, white space and (if `quoted`) a `"`, or an optional quote: the
/// value's offset from `base`; `Some(None)`: not this shape; `None`: more bytes are needed.
fn gap_then(after: &[u8], base: usize, separators: &[u8], quoted: bool) -> Option<Option<usize>> {
    let mut k = 0;
    let skip = |k: &mut usize| {
        while after
            .get(*k)
            .is_some_and(|b| *b == b' ' || *b == b'\t' || (quoted && b.is_ascii_whitespace()))
        {
            *k += 1;
        }
    };
    skip(&mut k);
    match after.get(k) {
        None if k < GAP => return None,
        Some(b) if separators.contains(b) => k += 1,
        _ => return Some(None),
    }
    skip(&mut k);
    if k > GAP {
        return Some(None);
    }
    match after.get(k) {
        None => None,
        Some(b'"') => Some(Some(base + k + 1)),
        Some(b'\'') if !quoted => Some(Some(base + k + 1)),
        Some(_) if quoted => Some(None),
        Some(b) if b.is_ascii_whitespace() => Some(None),
        Some(_) => Some(Some(base + k)),
    }
}

/// How many of the last bytes of `buf` are the start of some pattern (to be held for the next chunk).
fn prefix_tail(buf: &[u8], list: &[(Vec<u8>, Term)]) -> usize {
    let longest = list.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
    (1..longest.min(buf.len() + 1))
        .rev()
        .find(|&k| {
            let tail = &buf[buf.len() - k..];
            list.iter()
                .any(|(p, _)| p.len() > k && p[..k].eq_ignore_ascii_case(tail))
        })
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "key_mask_tests.rs"]
mod tests;
