//! A value of the wrong type is said in the configuration's words, never serde's or Rust's (`i64`, `u128`,
//! `struct RawRule`); the numbers and switches of a file are all listed at once, with every other error; an
//! empty file is refused at start as at reload.

use std::io::Write;

use crate::rigs::process::cordon;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

/// What only Rust or serde would say: a primitive's name, or a type of cordon's own.
fn rust_words(message: &str) -> Vec<String> {
    let words = message.split(|c: char| !c.is_ascii_alphanumeric() && c != '_');
    let primitive = [
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64",
    ];
    let mut found: Vec<String> = words
        .filter(|w| primitive.contains(w) || (w.starts_with("Raw") && w.len() > 3))
        .map(str::to_string)
        .collect();
    for phrase in ["struct ", "enum ", "variant", "Option<", "Vec<", "BTreeMap"] {
        if message.contains(phrase) {
            found.push(phrase.to_string());
        }
    }
    found
}

#[test]
fn a_wrong_type_in_any_kind_of_field_is_said_in_the_configs_words() {
    // One case per kind of field the file has: (YAML, the path named, what the message says).
    let cases = [
        (
            "limits:\n  max_connections: lots\n",
            "limits.max_connections",
            "expected a whole number, not the text \"lots\"",
        ),
        (
            "limits:\n  max_connections: 99999999999999999999999\n",
            "limits.max_connections",
            "which is too large",
        ),
        (
            "limits:\n  max_connections: -99999999999999999999999\n",
            "limits.max_connections",
            "which is too large",
        ),
        (
            "ca:\n  leaf_cache: 1.5\n",
            "ca.leaf_cache",
            "not the decimal number 1.5",
        ),
        (
            "limits:\n  per_user: { requests: { per_second: [1] } }\n",
            "limits.per_user.requests.per_second",
            "not a list",
        ),
        (
            "audit:\n  retain: { files: { n: 1 } }\n",
            "audit.retain.files",
            "not a mapping",
        ),
        (
            "policies:\n  p:\n    allow: [{ host: a.test, ports: [https] }]\n",
            "policies.p.allow[0].ports[0]",
            "expected a port number (1-65535), not the text \"https\"",
        ),
        (
            "policies:\n  p:\n    expose: [true]\n",
            "policies.p.expose[0]",
            "expected a port number",
        ),
        (
            "credentials:\n  c:\n    source: { github_app: { app_id: \"1\", installation_id: abc, private_key: { env: K } } }\n    bind: { hosts: [a.test] }\n    inject: { header: X }\n",
            "credentials.c.source.github_app.installation_id",
            "expected the installation's number, not the text \"abc\"",
        ),
        (
            "control:\n  watch: 1\n",
            "control.watch",
            "expected true or false, not the number 1",
        ),
        (
            "audit:\n  chain: \"yes please\"\n",
            "audit.chain",
            "expected true or false, not the text \"yes please\"",
        ),
        (
            "credentials:\n  c:\n    mask_echo: [1]\n",
            "credentials.c.mask_echo",
            "expected true or false, not a list",
        ),
        // Where a mapping, a list or text belongs: parsing stops there, with the line and column.
        (
            "sandboxes:\n  - 5\n",
            "sandboxes[0]",
            "expected a sandbox: a mapping with id, user, policy",
        ),
        (
            "policies:\n  p:\n    allow: [5]\n",
            "policies.p.allow[0]",
            "expected a rule: a mapping with host",
        ),
        (
            "limits:\n  per_sandbox: { requests: 5 }\n",
            "limits.per_sandbox.requests",
            "expected a rate such as { per_second: 50, burst: 100 }",
        ),
        (
            "control:\n  admin_token: secret\n",
            "control.admin_token",
            "expected a secret reference such as { env: VARIABLE }",
        ),
        (
            "network:\n  hosts: { a.test: { ip: 1 } }\n",
            "network.hosts",
            "expected an IP address or a list of them",
        ),
        (
            "policies:\n  p:\n    allow: { host: a.test }\n",
            "policies.p.allow",
            "expected a sequence",
        ),
        ("listen:\n  proxy: [1]\n", "listen.proxy", "expected a string"),
        ("policies: [1]\n", "policies", "expected a map"),
        ("5\n", "", "expected a mapping of settings"),
    ];
    for (yaml, path, said) in cases {
        let f = file(yaml);
        let (code, out, err) = cordon(&["check", "--config", f.path().to_str().unwrap()]);
        assert_eq!(code, 2, "{yaml}\n{out}{err}");
        assert!(
            err.contains(&format!("{path}: ")),
            "{yaml}: the path {path} is named\n{err}"
        );
        assert!(err.contains(said), "{yaml}: {said:?} in\n{err}");
        assert!(
            rust_words(&err).is_empty(),
            "{yaml}: Rust words {:?} in\n{err}",
            rust_words(&err)
        );
    }
}

#[test]
fn check_lists_every_wrong_number_and_switch_of_a_file_with_the_other_errors() {
    let f = file(
        "limits:\n  max_connections: lots\n  per_user: { max_open: 1.5 }\naudit:\n  chain: maybe\n\
         ca:\n  leaf_cache: [1]\ntimeouts:\n  connect: soon\n\
         sandboxes:\n  - { id: s, user: u, token_sha256: zz, policy: p }\n\
         policies:\n  p:\n    allow:\n      - { host: a.test, ports: [https, 0] }\n    expose: [\"80\"]\n",
    );
    let (code, _, err) = cordon(&["check", "--config", f.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    for needle in [
        "limits.max_connections: expected a whole number, not the text \"lots\"",
        "limits.per_user.max_open: expected a whole number, not the decimal number 1.5",
        "audit.chain: expected true or false, not the text \"maybe\"",
        "ca.leaf_cache: expected a whole number, not a list",
        "timeouts.connect: \"soon\" is not a duration",
        "sandboxes[0].token_sha256",
        "policies.p.allow[0].ports[0]: expected a port number (1-65535), not the text \"https\"",
        "policies.p.allow[0].ports[1]",
        "policies.p.expose[0]: expected a port number (1-65535), not the text \"80\"",
        "9 error(s)",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    assert!(rust_words(&err).is_empty(), "{err}");
}

#[test]
fn an_empty_config_file_is_refused_at_start_and_by_check() {
    for text in ["", "  \n\n\t\n", "# nothing yet\n\n   # still nothing\n"] {
        let f = file(text);
        let p = f.path().to_str().unwrap();
        for command in ["check", "run"] {
            let (code, out, err) = crate::rigs::process::cordon_env(&[command, "--config", p], &[]);
            assert_eq!(code, 2, "{command} with {text:?}\n{out}{err}");
            assert!(
                err.contains(&format!(
                    "{p}: the file is empty (or only comments); a file with no sandboxes and no policies must say so, e.g. `sandboxes: []`"
                )),
                "{command} with {text:?}: {err}"
            );
        }
    }
    // Saying so is enough.
    let f = file("sandboxes: []\n");
    let (code, out, err) = cordon(&["check", "--config", f.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
}
