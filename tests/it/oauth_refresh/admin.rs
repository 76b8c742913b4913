//! Seeding through the admin API (roles, bad bodies, the token never answered back), and the configuration's
//! errors for `source.oauth2_refresh`, which `check` and `run` refuse alike.

use super::rig::World;
use crate::rigs::control::admin_request;
use crate::rigs::process::cordon_env;
use crate::rigs::wait::TimedChild;

const VIEWER: &str = "oauth-test-viewer-token-0987654321";
const ADMIN: &str = "oauth-test-admin-token-1234567890";

#[tokio::test(flavor = "multi_thread")]
async fn seeding_needs_the_admin_role_and_a_token_and_never_answers_it_back() {
    let w = World::new(600).await;
    std::fs::write(w.path("viewer-token"), VIEWER).unwrap();
    let store = format!(
        "{}\n  admin_tokens: [{{ name: v, roles: [viewer], token: {{ file: {} }} }}]",
        w.sqlite_store(),
        w.path("viewer-token").display()
    );
    let c = w.cordon("one", &store, &[]).await;
    let admin = std::net::SocketAddr::from(([127, 0, 0, 1], c.admin));
    let token = w.provider.sign_in();
    let body = format!("{{\"refresh_token\": \"{token}\"}}");
    let path = "/v1/credentials/held/refresh-token";

    let (status, _, answer) = admin_request(admin, "PUT", path, None, &body).await;
    assert_eq!(status, 401, "{answer}");
    let (status, _, answer) = admin_request(admin, "PUT", path, Some(VIEWER), &body).await;
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("admin"), "{answer}");
    let (status, _, answer) = admin_request(admin, "GET", path, Some(ADMIN), "").await;
    assert_eq!(status, 405, "{answer}");
    let (status, _, answer) =
        admin_request(admin, "PUT", "/v1/credentials/nope/refresh-token", Some(ADMIN), &body).await;
    assert_eq!(status, 404, "{answer}");
    for bad in [
        "{}".to_owned(),
        r#"{"refresh_token": ""}"#.to_owned(),
        r#"{"refresh_token": 7}"#.to_owned(),
        format!(r#"{{"refresh_token": "{token} x"}}"#),
        format!(r#"{{"refresh_token": "{token}\r\nX-Evil: 1"}}"#),
        format!(r#"{{"refresh_token": "{}"}}"#, "a".repeat(8193)),
    ] {
        let (status, _, answer) = admin_request(admin, "PUT", path, Some(ADMIN), &bad).await;
        assert_eq!(status, 422, "{bad}: {answer}");
        assert!(!answer.contains(&token), "the token was answered back: {answer}");
    }
    // Nothing was seeded by the refusals.
    let ph = c.placeholder();
    assert_eq!(c.get(&w, "/x", &ph).status, 503);

    let (status, _, answer) = admin_request(admin, "PUT", path, Some(ADMIN), &body).await;
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.contains(&token), "{answer}");
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        (v["credential"].as_str(), v["generation"].as_i64()),
        (Some("held"), Some(1))
    );
    assert_eq!(c.get(&w, "/y", &ph).status, 200);
    // Seeding again makes a new generation (after the first seed's, and its rotation's).
    let (status, _, answer) = admin_request(
        admin,
        "PUT",
        path,
        Some(ADMIN),
        &format!("{{\"refresh_token\": \"{}\"}}", w.provider.sign_in()),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["generation"], 3, "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_bad_field_of_oauth2_refresh_is_named_and_check_refuses_what_run_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let base = |source: &str, control: &str| {
        format!(
            "listen: {{ proxy: 127.0.0.1:0 }}\nca: {{ dir: {d}/cas }}\nvault: {{ file: {{ path: {d}/vault/v }} }}\n\
             control:\n{control}\ncredentials:\n  held:\n    source:\n      oauth2_refresh:\n{source}\n    \
             bind: {{ hosts: [api.example.com] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n"
        )
    };
    let good = "        token_url: https://auth.example.com/token\n        client_id: cordon";
    let store = format!("  store: {d}/c.db\n  store_key: {{ env: K }}");
    let cases: Vec<(String, &str)> = vec![
        (
            base(good, "  watch: false"),
            "credentials.held.source.oauth2_refresh: needs `control.store`",
        ),
        (
            base(good, &format!("  store: {d}/c.db")),
            "credentials.held.source.oauth2_refresh: needs `control.store_key`",
        ),
        (
            base(
                "        token_url: http://auth.example.com/token\n        client_id: cordon",
                &store,
            ),
            "credentials.held.source.oauth2_refresh.token_url: \"http://auth.example.com/token\" must be https://",
        ),
        (
            base("        token_url: not a url\n        client_id: cordon", &store),
            "credentials.held.source.oauth2_refresh.token_url: \"not a url\" is not an http(s) URL",
        ),
        (
            base(
                "        token_url: https://auth.example.com/token\n        client_id: \" \"",
                &store,
            ),
            "credentials.held.source.oauth2_refresh.client_id: is empty",
        ),
        (
            base(&format!("{good}\n        scope: \"\""), &store),
            "credentials.held.source.oauth2_refresh.scope: is empty",
        ),
        (
            base(&format!("{good}\n        client_secret: {{ nowhere: x }}"), &store),
            "credentials.held.source.oauth2_refresh.client_secret",
        ),
        // SECURITY: the refresh token is never written into the configuration.
        (
            base(&format!("{good}\n        refresh_token: abc"), &store),
            "unknown field `refresh_token`",
        ),
    ];
    for (i, (yaml, want)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("c{i}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        let p = path.to_str().unwrap();
        let (code, out, err) = cordon_env(&["check", "--config", p], &[("K", "0123456789abcdef0123456789abcdef")]);
        assert_ne!(code, 0, "check took case {i}: {out}{err}");
        assert!(
            format!("{out}{err}").contains(want),
            "case {i}: no {want:?} in {out}{err}"
        );
        let (code, out, err) = cordon_env(&["run", "--config", p], &[("K", "0123456789abcdef0123456789abcdef")]);
        assert!(code != 0 && code != -1, "run took case {i}: {out}{err}");
        assert!(
            format!("{out}{err}").contains(want),
            "run, case {i}: no {want:?} in {out}{err}"
        );
    }
    // The good one passes check.
    let path = dir.path().join("good.yaml");
    std::fs::write(&path, base(good, &store)).unwrap();
    let (code, out, err) = cordon_env(
        &["check", "--config", path.to_str().unwrap()],
        &[("K", "0123456789abcdef0123456789abcdef")],
    );
    assert_eq!(code, 0, "{out}{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_examples_work_as_printed() {
    use crate::cli::examples::shown;
    let w = World::new(600).await;
    let c = w
        .cordon_edited("one", &w.sqlite_store(), &[], |y| {
            y.replace("  held:\n", "  assistant:\n")
                .replace("credentials: [held]", "credentials: [assistant]")
        })
        .await;
    let ph = c.placeholder();
    let bin = std::path::Path::new(crate::rigs::process::BIN)
        .parent()
        .unwrap()
        .to_owned();
    let work = w.path("work");
    std::fs::create_dir_all(&work).unwrap();
    let run = |path: &str, line: &str, token: &str| {
        shown(path, line);
        std::fs::write(work.join("refresh-token"), format!("{token}\n")).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", line])
            .current_dir(&work)
            .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))
            .env("CORDON_CONFIG", &c.config)
            .env("REFRESH_TOKEN", token)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
            .timed_wait_with_output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{line}: {said}");
        assert!(!said.contains(token), "{line} printed the token: {said}");
        let v: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
        assert_eq!(v["credential"], "assistant", "{said}");
    };
    let file = "cordon credentials seed assistant --refresh-token-file ./refresh-token";
    let stdin = "printf '%s' \"$REFRESH_TOKEN\" | cordon credentials seed assistant --refresh-token-file -";
    // Each seeding is a new grant's token; each time the sandbox's request goes through with it.
    for (path, line) in [
        ("credentials", file),
        ("credentials seed", file),
        ("credentials seed", stdin),
    ] {
        run(path, line, &w.provider.sign_in());
        let got = c.get(&w, &format!("/{}", w.up.seen().len()), &ph);
        assert_eq!(got.status, 200, "after `{line}`: {got:?}");
    }
    assert_eq!(
        w.provider.stats()["refresh_ok"],
        3,
        "each seeded token was the one used"
    );
}
