//! The examples of `cordon policy diff` and `cordon policy contains`, run as `--help` prints them against the
//! embedded configuration, with the narrow policy file their `# ` lines name.

use serde_json::Value;

use crate::cli::examples::{run_in, shown};

#[test]
fn the_diff_and_contains_examples_run_as_printed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("narrow.yaml"),
        "allow:\n  - host: api.github.com\n    ports: [443]\n    methods: [GET]\n    paths: [\"/repos/acme/**\"]\n",
    )
    .unwrap();
    let run = |path: &str, line: &str| {
        shown(path, line);
        run_in(d, line, "", &[])
    };
    // narrow.yaml only narrows `default`: nothing added, and contained.
    let (code, out, err) = run("policy diff", "cordon policy diff default narrow.yaml");
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run("policy contains", "cordon policy contains default narrow.yaml");
    assert_eq!(code, 0, "{out}{err}");
    // The other way round, `default` adds hosts narrow.yaml never reached, each shown by a request.
    let (code, out, err) = run("policy diff", "cordon policy diff --json narrow.yaml default");
    assert_eq!(code, 1, "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    assert!(out.contains("pypi.org"), "{v:#}");
}
