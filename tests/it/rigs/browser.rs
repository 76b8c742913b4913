//! A real browser the tests drive: headless Chromium (Debian's `chromium`) through Debian's `chromedriver`, over
//! WebDriver with the fantoccini crate. Each [`Browser`] has a driver, a profile and cookies of its own, so two
//! of them are two people.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use crate::rigs::ports::free_port;
use crate::rigs::process::Killed;

/// One browser: its WebDriver session, its driver process and its profile.
pub(crate) struct Browser {
    pub(crate) client: Client,
    _driver: Killed,
    _profile: tempfile::TempDir,
}

/// A new headless Chromium with an empty profile, 1280x900.
pub(crate) async fn browser() -> Browser {
    for (tool, package) in [("chromium", "chromium"), ("chromedriver", "chromium-driver")] {
        crate::rigs::tool::must(tool, &["--version"], &format!("apt-get install {package}"));
    }
    let port = free_port();
    // In a process group of its own, which the Chromium it starts joins: dropping the browser ends them all.
    let driver = Killed(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    crate::rigs::wait::listening("chromedriver", &format!("127.0.0.1:{port}"), Duration::from_secs(20)).await;
    let profile = tempfile::tempdir().unwrap();
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), json!("chrome"));
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-quic", "--window-size=1280,900", "--lang=en-US",
                format!("--user-data-dir={}", profile.path().display()),
            ],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .unwrap_or_else(|e| panic!("no WebDriver session with Chromium: {e}"));
    Browser {
        client,
        _driver: driver,
        _profile: profile,
    }
}

impl Drop for Browser {
    /// Killing chromedriver alone would leave its Chromium running (a dozen processes) after every test: the
    /// whole group goes.
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self._driver.0.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    }
}

impl Browser {
    /// Wait up to `secs` seconds for an element `css` matches.
    pub(crate) async fn wait_for(&self, css: &str, secs: u64) -> fantoccini::elements::Element {
        match self
            .client
            .wait()
            .at_most(Duration::from_secs(secs))
            .for_element(Locator::Css(css))
            .await
        {
            Ok(e) => e,
            Err(e) => panic!("no {css} within {secs}s: {e}\n{}", self.text().await),
        }
    }

    /// The page's text, for failure messages.
    pub(crate) async fn text(&self) -> String {
        match self.client.find(Locator::Css("body")).await {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(_) => self.client.source().await.unwrap_or_default(),
        }
    }

    /// Wait up to `secs` seconds until the page's text holds `wanted`.
    pub(crate) async fn wait_text(&self, wanted: &str, secs: u64) -> String {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = self.text().await;
            if text.contains(wanted) {
                return text;
            }
            assert!(
                Instant::now() < until,
                "the page never said {wanted:?}; it says:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A screenshot of the page (PNG).
    pub(crate) async fn screenshot(&self) -> Vec<u8> {
        let png = self.client.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        png
    }

    /// End the WebDriver session.
    pub(crate) async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}
