#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::*;
use crate::secrets::issuer::{ExposeSecret, SecretString};

fn token(value: &str, lifetime: Duration) -> Token {
    Token {
        value: SecretString::from(value),
        expires_at: Some(SystemTime::now() + lifetime),
    }
}

fn down() -> IssuerError {
    IssuerError::Unavailable {
        issuer: "http://127.0.0.1:1/token".into(),
        detail: "connection refused".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_gets_make_one_fetch() {
    let cache = Arc::new(TokenCache::new(Duration::from_secs(60), 100));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let cache = cache.clone();
        tasks.spawn(async move {
            cache
                .get("cred|scope|sandbox-a", || async {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok(token("tok-1", Duration::from_secs(600)))
                })
                .await
        });
    }
    while let Some(result) = tasks.join_next().await {
        assert_eq!(result.unwrap().unwrap().value.expose_secret(), "tok-1");
    }
    assert_eq!(cache.fetches(), 1);

    // Another key is separate.
    let other = cache
        .get("cred|scope|sandbox-b", || async {
            Ok(token("tok-b", Duration::from_secs(600)))
        })
        .await
        .unwrap();
    assert_eq!(other.value.expose_secret(), "tok-b");
    assert_eq!(cache.fetches(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_gets_share_one_failed_fetch() {
    let cache = Arc::new(TokenCache::new(Duration::from_secs(1), 100));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let cache = cache.clone();
        tasks.spawn(async move {
            cache
                .get("k", || async {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Err(down())
                })
                .await
        });
    }
    while let Some(result) = tasks.join_next().await {
        assert!(result.unwrap().unwrap_err().is_unavailable());
    }
    assert_eq!(cache.fetches(), 1);
}

#[tokio::test]
async fn refreshes_ahead_of_expiry_and_serves_the_old_token_meanwhile() {
    let cache = Arc::new(TokenCache::new(Duration::from_secs(1), 100));
    let first = cache
        .get("k", || async { Ok(token("tok-1", Duration::from_secs(2))) })
        .await
        .unwrap();
    assert_eq!(first.value.expose_secret(), "tok-1");
    let again = cache
        .get("k", || async { Ok(token("tok-x", Duration::from_secs(2))) })
        .await
        .unwrap();
    assert_eq!(again.value.expose_secret(), "tok-1");
    assert_eq!(cache.fetches(), 1);

    // Within refresh_ahead of expiry: the next get refreshes; gets during that refresh get the old token
    // without waiting.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let slow_refresh = {
        let cache = cache.clone();
        tokio::spawn(async move {
            cache
                .get("k", || async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Ok(token("tok-2", Duration::from_secs(60)))
                })
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    let meanwhile = cache
        .get("k", || async { Ok(token("tok-y", Duration::from_secs(60))) })
        .await
        .unwrap();
    assert_eq!(meanwhile.value.expose_secret(), "tok-1");
    assert!(started.elapsed() < Duration::from_millis(250), "waited for the refresh");

    assert_eq!(slow_refresh.await.unwrap().unwrap().value.expose_secret(), "tok-2");
    let after = cache
        .get("k", || async { Ok(token("tok-z", Duration::from_secs(60))) })
        .await
        .unwrap();
    assert_eq!(after.value.expose_secret(), "tok-2");
    assert_eq!(cache.fetches(), 2);
}

#[tokio::test]
async fn issuer_down_serves_the_valid_token_but_never_an_expired_one() {
    let cache = TokenCache::new(Duration::from_secs(1), 100);
    cache
        .get("k", || async { Ok(token("tok-1", Duration::from_secs(2))) })
        .await
        .unwrap();

    // Due for refresh, issuer down, token still valid: the cached token.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let cached = cache.get("k", || async { Err(down()) }).await.unwrap();
    assert_eq!(cached.value.expose_secret(), "tok-1");
    assert_eq!(cache.fetches(), 2);
    // Right after a failure the issuer is not asked again while the token is valid.
    let cached = cache.get("k", || async { Err(down()) }).await.unwrap();
    assert_eq!(cached.value.expose_secret(), "tok-1");
    assert_eq!(cache.fetches(), 2);

    // SECURITY test: expired, issuer down: the error, never the expired token.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let err = cache.get("k", || async { Err(down()) }).await.unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    assert_eq!(cache.fetches(), 3);

    // The issuer is back.
    let fresh = cache
        .get("k", || async { Ok(token("tok-2", Duration::from_secs(60))) })
        .await
        .unwrap();
    assert_eq!(fresh.value.expose_secret(), "tok-2");
}

#[tokio::test]
async fn an_already_expired_token_from_the_issuer_is_an_error() {
    // SECURITY test: a token that arrives expired (clock skew, broken issuer) is never handed out.
    let cache = TokenCache::new(Duration::from_secs(1), 100);
    let err = cache
        .get("k", || async {
            Ok(Token {
                value: SecretString::from("tok-old"),
                expires_at: Some(SystemTime::now() - Duration::from_secs(1)),
            })
        })
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("tok-old"));
    assert!(!err.is_unavailable());
}

#[tokio::test]
async fn a_token_without_expiry_is_kept_for_the_default_lifetime() {
    let cache = TokenCache::new(Duration::from_secs(60), 100);
    let calls = AtomicU64::new(0);
    for _ in 0..3 {
        let t = cache
            .get("k", || async {
                calls.fetch_add(1, Ordering::Relaxed);
                Ok(Token {
                    value: SecretString::from("tok-forever"),
                    expires_at: None,
                })
            })
            .await
            .unwrap();
        assert_eq!(t.value.expose_secret(), "tok-forever");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    assert_eq!(cache.fetches(), 1);
}

#[tokio::test]
async fn invalidate_forgets_the_token() {
    let cache = TokenCache::new(Duration::from_secs(1), 100);
    let ok = |v: &'static str| move || async move { Ok(token(v, Duration::from_secs(60))) };
    cache.get("k", ok("tok-1")).await.unwrap();
    cache.invalidate("k").await;
    let t = cache.get("k", ok("tok-2")).await.unwrap();
    assert_eq!(t.value.expose_secret(), "tok-2");
    assert_eq!(cache.fetches(), 2);
}
