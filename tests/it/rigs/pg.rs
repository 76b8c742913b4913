//! A throwaway PostgreSQL cluster per test, started by the test: `initdb` into a temporary folder, TLS on
//! with a server certificate from a test CA, scram-sha-256 over TCP for role `cordon` (owner of database
//! `cordon`), and trust over the cluster's own Unix socket for the harness's superuser `postgres`.
//! Debian's `postgresql` package provides the binaries (.ci/run installs it); without them the tests fail.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::rigs::ports::free_port;
use crate::rigs::wait::{TimedChild, Within};

/// A running (or stopped) cluster of the test's own; dropping it kills the server and removes its files.
pub(crate) struct Pg {
    /// Everything: the socket, the certificates, the server log, and the data directory `data/`.
    dir: tempfile::TempDir,
    /// Where `initdb`, `pg_ctl` and `psql` are.
    bin: PathBuf,
    port: u16,
    ca_pem: String,
    /// The uid and gid the server runs as when the tests run as root (initdb and postgres refuse root).
    run_as: Option<(u32, u32)>,
}

impl Pg {
    /// The password of role `cordon`.
    pub(crate) const PASSWORD: &'static str = "cordon-test-pw-5Kq8vT2";

    /// Start a fresh cluster on a free 127.0.0.1 port; returns once it accepts connections.
    pub(crate) fn start() -> Pg {
        let bin = bin_dir();
        let run_as = server_user();
        let dir = tempfile::Builder::new()
            .prefix("cordon-pg-")
            .tempdir_in(temp_base(run_as.is_some()))
            .unwrap();
        let mut pg = Pg {
            dir,
            bin,
            port: 0,
            ca_pem: String::new(),
            run_as,
        };
        pg.own(pg.dir.path());
        pg.make_certificates();
        let out = pg
            .tool("initdb")
            .arg("-D")
            .arg(pg.data())
            .args([
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ])
            .timed_output()
            .unwrap();
        assert!(out.status.success(), "initdb failed: {}", text(&out));
        let conf = pg.data().join("postgresql.conf");
        let mut f = std::fs::OpenOptions::new().append(true).open(&conf).unwrap();
        writeln!(f, "include 'cordon-test.conf'").unwrap();
        // A port taken by someone else between the check and postgres's bind: try another.
        for attempt in 1.. {
            pg.port = free_port();
            pg.write_config();
            let log_from = pg.log().len();
            if pg.pg_ctl_start() {
                break;
            }
            let log = pg.log();
            let new = log.get(log_from..).unwrap_or(&log);
            assert!(
                new.contains("Address already in use") && attempt < 10,
                "postgres did not start on port {}:\n{new}",
                pg.port
            );
        }
        pg.psql_in(
            "postgres",
            &format!(
                "CREATE ROLE cordon LOGIN PASSWORD '{}';\nCREATE DATABASE cordon OWNER cordon;",
                Pg::PASSWORD
            ),
        );
        pg
    }

    /// DSN without the password, TLS required: `postgres://cordon@127.0.0.1:PORT/cordon?sslmode=require`.
    pub(crate) fn dsn(&self) -> String {
        format!("postgres://cordon@127.0.0.1:{}/cordon?sslmode=require", self.port)
    }

    /// The same over plaintext (loopback): `sslmode=disable`.
    pub(crate) fn dsn_plain(&self) -> String {
        format!("postgres://cordon@127.0.0.1:{}/cordon?sslmode=disable", self.port)
    }

    /// PEM of the CA that signed the server certificate (for 127.0.0.1 and localhost).
    pub(crate) fn ca_pem(&self) -> String {
        self.ca_pem.clone()
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `pg_ctl stop -m fast`, keeping the cluster; returns once the server is down.
    pub(crate) fn stop(&self) {
        let out = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-t", "60", "stop", "-m", "fast"])
            .timed_output()
            .unwrap();
        assert!(out.status.success(), "pg_ctl stop failed: {}", text(&out));
    }

    /// Start the stopped cluster again on the same port; returns once it accepts connections.
    pub(crate) fn start_again(&self) {
        let log_from = self.log().len();
        if !self.pg_ctl_start() {
            let log = self.log();
            panic!(
                "postgres did not start again on port {}:\n{}",
                self.port,
                log.get(log_from..).unwrap_or(&log)
            );
        }
    }

    /// Run `sql` as the superuser through psql against database `cordon`; returns psql's `-At` output
    /// without its last newline. Panics with psql's stderr if any statement fails.
    pub(crate) fn psql(&self, sql: &str) -> String {
        self.psql_in("cordon", sql)
    }

    /// `psql` of the cluster's own version, run as the current user, with no `PG*` variable inherited.
    pub(crate) fn client(&self) -> Command {
        let psql = self.bin.join("psql");
        let mut c = Command::new(if psql.is_file() { psql } else { "psql".into() });
        clear_pg_env(&mut c);
        c
    }

    fn psql_in(&self, db: &str, sql: &str) -> String {
        let mut child = self
            .client()
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.dir.path())
            .args(["-p", &self.port.to_string(), "-U", "postgres", "-d", db, "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let sql = sql.to_string();
        let writer = std::thread::spawn(move || stdin.write_all(sql.as_bytes()));
        let out = child.timed_wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(out.status.success(), "psql failed: {}", text(&out));
        let stdout = String::from_utf8(out.stdout).unwrap();
        stdout.strip_suffix('\n').unwrap_or(&stdout).to_string()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// A server tool from the bin dir, run as the server's user, in the cluster's folder.
    fn tool(&self, name: &str) -> Command {
        let mut c = Command::new(self.bin.join(name));
        c.current_dir(self.dir.path()).stdin(Stdio::null());
        clear_pg_env(&mut c);
        if let Some((uid, gid)) = self.run_as {
            // std drops the supplementary groups too when it changes the uid from root.
            c.uid(uid).gid(gid);
        }
        c
    }

    /// `pg_ctl start`, waiting until the server accepts connections; whether it did.
    fn pg_ctl_start(&self) -> bool {
        self.tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .args(["-w", "-t", "60", "start"])
            .timed_output()
            .unwrap()
            .status
            .success()
    }

    /// Hand `path` to the server's user (when the tests run as root).
    fn own(&self, path: &Path) {
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
        }
    }

    /// Write a file of the cluster's folder, owned by the server's user, with `mode`.
    fn put(&self, path: &Path, contents: &str, mode: u32) {
        std::fs::write(path, contents).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        self.own(path);
    }

    /// A test CA and a server certificate it signed for 127.0.0.1 and localhost.
    fn make_certificates(&mut self) {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "cordon pg test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::from_ca_cert_der(ca.der(), ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, "localhost");
        let cert = params.signed_by(&key, &issuer).unwrap();
        self.ca_pem = ca.pem();
        let dir = self.dir.path();
        self.put(&dir.join("ca.crt"), &self.ca_pem, 0o644);
        self.put(&dir.join("server.crt"), &cert.pem(), 0o644);
        // postgres refuses a key file others can read.
        self.put(&dir.join("server.key"), &key.serialize_pem(), 0o600);
    }

    /// The settings postgresql.conf includes: where to listen, TLS, and speed over durability.
    fn write_config(&self) {
        let dir = self.dir.path().display();
        let conf = format!(
            "listen_addresses = '127.0.0.1'\n\
             port = {port}\n\
             unix_socket_directories = '{dir}'\n\
             ssl = on\n\
             ssl_cert_file = '{dir}/server.crt'\n\
             ssl_key_file = '{dir}/server.key'\n\
             password_encryption = 'scram-sha-256'\n\
             max_connections = 200\n\
             shared_buffers = '16MB'\n\
             huge_pages = off\n\
             fsync = off\n\
             synchronous_commit = off\n\
             full_page_writes = off\n",
            port = self.port,
        );
        self.put(&self.data().join("cordon-test.conf"), &conf, 0o644);
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        // Never panics: every result is ignored; the TempDir then removes the files.
        let _ = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-t", "30", "stop", "-m", "immediate"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .timed_status();
    }
}

/// `$CORDON_PG_BIN`, else the highest `/usr/lib/postgresql/*/bin`, else where `initdb` on PATH really is.
fn bin_dir() -> PathBuf {
    let has_tools = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("CORDON_PG_BIN") {
        let dir = PathBuf::from(dir);
        assert!(
            has_tools(&dir),
            "CORDON_PG_BIN={} holds no initdb and pg_ctl",
            dir.display()
        );
        return dir;
    }
    let version = |name: &str| -> Option<Vec<u32>> { name.split('.').map(|n| n.parse().ok()).collect() };
    let mut installed: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((version(e.file_name().to_str()?)?, e.path().join("bin"))))
        .filter(|(_, bin)| has_tools(bin))
        .collect();
    installed.sort();
    if let Some((_, bin)) = installed.pop() {
        return bin;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("initdb"))
        .find(|p| p.is_file())
        .and_then(|p| Some(p.canonicalize().ok()?.parent()?.to_path_buf()))
        .filter(|d| has_tools(d))
        .unwrap_or_else(|| {
            panic!(
                "PostgreSQL is not installed (no initdb and pg_ctl in $CORDON_PG_BIN, /usr/lib/postgresql/*/bin \
                 or PATH): the database tests need a real server; run `apt-get install postgresql` (.ci/run does)"
            )
        })
}

/// Who the server runs as: the current user, or Debian's `postgres` user when the tests run as root.
fn server_user() -> Option<(u32, u32)> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let user = nix::unistd::User::from_name("postgres")
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            panic!(
                "the tests run as root, which initdb refuses, and there is no `postgres` user to run PostgreSQL as; \
             run `apt-get install postgresql` (.ci/run does), which creates it"
            )
        });
    Some((user.uid.as_raw(), user.gid.as_raw()))
}

/// The temporary folder, or /tmp when the server's user could not reach into it (a root-only TMPDIR).
fn temp_base(other_user: bool) -> PathBuf {
    let base = std::env::temp_dir();
    let reachable = base
        .ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
    if other_user && !reachable {
        PathBuf::from("/tmp")
    } else {
        base
    }
}

/// Keep the caller's `PGHOST`, `PGSSLMODE` and the like from changing what a command connects to.
fn clear_pg_env(c: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(|k| k.starts_with("PG")) {
            c.env_remove(key);
        }
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
