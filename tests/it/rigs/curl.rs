//! curl run once and read once: its exit code, the final response's status, the proxy's answer to CONNECT, the
//! final response's headers and its body, from curl's own JSON (`-w '%{json}%{header_json}'`, the body to a
//! file), so that no test parses curl's `-i` or `-w` text by hand. With a deadline (see [`crate::rigs::wait`]).

use std::process::Command;

use crate::rigs::wait::Within;

/// What one curl run gave.
#[derive(Debug)]
pub(crate) struct Curled {
    /// curl's exit code (0: the transfer worked, whatever the status; 22 with `-f` and a status >= 400).
    pub code: i32,
    /// The final response's status (0 when there was none).
    pub status: u16,
    /// The proxy's answer to CONNECT (0 when there was no CONNECT).
    pub connect: u16,
    /// The final response's HTTP version as curl names it (`1.1`, `2`; `0` when there was none).
    pub version: String,
    /// The final response's headers, names lower-case; a repeated header once per value, in the order received.
    pub headers: Vec<(String, String)>,
    /// The proxy's answer to CONNECT: its headers, names lower-case (empty when there was no CONNECT). A refused
    /// CONNECT's `x-cordon-reason` is here, since there is no final response then.
    pub connect_headers: Vec<(String, String)>,
    /// The final response's body (decoded when curl was asked `--compressed`).
    pub body: Vec<u8>,
    /// What curl said on stderr (its error, with `-sS`).
    pub stderr: String,
    /// curl's own `errormsg`, empty when it had none.
    pub error: String,
}

impl Curled {
    /// The first value of header `name` (any case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// cordon's refusal reason (`x-cordon-reason`), empty when there is none.
    pub(crate) fn reason(&self) -> &str {
        self.header("x-cordon-reason").unwrap_or("")
    }

    /// The body as text (lossy).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The final response's head as curl's `-i` would show it (lower-case names, `\r\n` ends), for messages
    /// and for tests that check the head as a whole.
    pub(crate) fn head(&self) -> String {
        let mut head = format!("HTTP/{} {}\r\n", self.version, self.status);
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head
    }
}

impl std::fmt::Display for Curled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "curl exit {} (CONNECT {}): {}{}\n{}{}",
            self.code,
            self.connect,
            self.head(),
            self.text(),
            self.stderr,
            self.error
        )
    }
}

/// Run `c`, a curl command ([`crate::rigs::process::curl`] or one of the test's own) with its options and URL
/// but none of its own `-o`, `-D`, `-i` or `-w`, within [`crate::rigs::wait::DEADLINE`] (curl's own
/// `--max-time` ends it first); what it gave.
pub(crate) fn run(mut c: Command) -> Curled {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    let heads_file = dir.path().join("heads");
    c.arg("-o")
        .arg(&body)
        .arg("-D")
        .arg(&heads_file)
        .args(["-w", "%{json}%{header_json}"]);
    let out = c.timed_output().unwrap_or_else(|e| panic!("{c:?} did not start: {e}"));
    let mut values = serde_json::Deserializer::from_slice(&out.stdout).into_iter::<serde_json::Value>();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let info = values
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("{c:?} wrote no %{{json}}: {stdout}{stderr}"));
    let heads = values.next().and_then(Result::ok).unwrap_or_default();
    let number = |k: &str| info[k].as_u64().and_then(|n| u16::try_from(n).ok()).unwrap_or(0);
    let mut headers = Vec::new();
    if let Some(map) = heads.as_object() {
        for (name, values) in map {
            for v in values.as_array().into_iter().flatten() {
                headers.push((name.to_ascii_lowercase(), v.as_str().unwrap_or_default().to_owned()));
            }
        }
    }
    let connect = number("http_connect");
    // curl's JSON holds the final response's headers only; the CONNECT's are the first head of the dump.
    let connect_headers = if connect == 0 {
        Vec::new()
    } else {
        std::fs::read_to_string(&heads_file)
            .unwrap_or_default()
            .split("\r\n\r\n")
            .next()
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect()
    };
    Curled {
        connect_headers,
        code: out.status.code().unwrap_or(-1),
        status: number("http_code"),
        connect,
        version: info["http_version"].as_str().unwrap_or("0").to_owned(),
        headers,
        body: std::fs::read(&body).unwrap_or_default(),
        stderr,
        error: info["errormsg"].as_str().unwrap_or_default().to_owned(),
    }
}
