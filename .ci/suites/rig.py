"""The rig the field's suites (.ci/suites.sh) share: a cordon process on a configuration of its own, nginx as
the upstream (plain HTTP and HTTPS, its access log read back), a test CA for the certificates cordon does not
make (the upstream's, the admin and console listeners'), a local forwarder that opens a CONNECT with
Proxy-Authorization and splices (for tools that cannot speak through an authenticated proxy), and a count of
cases that fails a suite that ran none.

Everything listens on 127.0.0.0/8; every wait has a deadline.
"""

import atexit
import base64
import datetime
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

BIN = os.environ.get("CORDON_BIN") or os.path.expanduser("~/.cache/cordon-target/debug/cordon")
TOKEN = "tok-suites"
UPSTREAM_IP = "127.0.0.2"
# Rate limits high enough for a scanner's bursts (the defaults answer 429 within a second of sslyze).
UNLIMITED = """limits:
  per_sandbox:
    requests: { per_second: 100000, burst: 100000 }
    connections: { per_second: 100000, burst: 100000 }
  per_user:
    requests: { per_second: 100000, burst: 100000 }
"""


def free_port(ip="127.0.0.1"):
    """A port nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def wait_port(addr, deadline=15.0, proc=None):
    """Wait until something accepts on `addr` (host, port); fail if `proc` exits first or the deadline passes."""
    until = time.monotonic() + deadline
    while time.monotonic() < until:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"{proc.args[0]} exited ({proc.returncode}) before listening on {addr}")
        try:
            with socket.create_connection(addr, timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {addr} after {deadline}s")


class Cases:
    """Counts cases; `done()` prints the closing line and exits non-zero on a failure or on no case at all."""

    def __init__(self, suite):
        self.suite = suite
        self.passed = 0
        self.failed = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"  ok    {name}")
        else:
            self.failed.append(name)
            print(f"  FAIL  {name}: {detail}")
        sys.stdout.flush()
        return ok

    def done(self):
        total = self.passed + len(self.failed)
        print(f"{self.suite}: {self.passed} passed, {len(self.failed)} failed")
        if total == 0:
            print(f"{self.suite}: ran no case", file=sys.stderr)
            sys.exit(1)
        sys.exit(1 if self.failed else 0)


class TestCa:
    """A CA of the test's own, for the certificates cordon is given rather than makes."""

    def __init__(self, name="suites test CA"):
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )

    def pem(self):
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def leaf(self, names, ips=()):
        """(certificate PEM, key PEM) for these DNS names and IP addresses."""
        import ipaddress

        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        san = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (list(names) + list(ips))[0])]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(san), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem


class Nginx:
    """nginx on 127.0.0.2: `plain` (HTTP/1.1) and `tls` (HTTPS, h2 and HTTP/1.1) ports, answering every request
    with 200 and a short body, and logging one line per request it parsed (method, URI, lengths)."""

    def __init__(self, folder, ca):
        self.dir = os.path.join(folder, "nginx")
        os.makedirs(os.path.join(self.dir, "logs"), exist_ok=True)
        self.plain = free_port(UPSTREAM_IP)
        self.tls = free_port(UPSTREAM_IP)
        cert, key = ca.leaf(["up.test"])
        for name, text in [("up.crt", cert), ("up.key", key)]:
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        self.log = os.path.join(self.dir, "logs", "access.json")
        with open(os.path.join(self.dir, "big"), "wb") as f:
            f.write(b"z" * (4 * 1024 * 1024))
        conf = f"""
daemon off;
master_process on;
worker_processes 1;
user root;
pid {self.dir}/nginx.pid;
error_log {self.dir}/logs/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
  log_format j escape=json '{{"method":"$request_method","uri":"$request_uri","status":$status,'
                           '"cl":"$http_content_length","te":"$http_transfer_encoding","len":$request_length,'
                           '"proto":"$server_protocol","conn":"$connection","host":"$host"}}';
  client_body_temp_path {self.dir}/body;
  # Heads as large as cordon lets through (limits.max_request_header_bytes, 64 KiB), so that cordon decides.
  large_client_header_buffers 4 128k;
  proxy_temp_path {self.dir}/proxy;
  fastcgi_temp_path {self.dir}/fastcgi;
  uwsgi_temp_path {self.dir}/uwsgi;
  scgi_temp_path {self.dir}/scgi;
  server {{
    listen {UPSTREAM_IP}:{self.plain};
    # HTTPS over HTTP/1.1 only: what cordon receives over h2 it sends on over HTTP/1.1 (the downgrade).
    listen {UPSTREAM_IP}:{self.tls} ssl;
    ssl_certificate {self.dir}/up.crt;
    ssl_certificate_key {self.dir}/up.key;
    access_log {self.log} j;
    location /big {{ alias {self.dir}/big; default_type application/octet-stream; }}
    location / {{
      # Read the body (so its framing is nginx's to judge), then answer.
      client_max_body_size 1m;
      echo_read_request_body off;
      return 200 "up\\n";
    }}
  }}
}}
"""
        conf = conf.replace("      echo_read_request_body off;\n", "")
        self.conf = os.path.join(self.dir, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen(
            [nginx, "-c", self.conf, "-p", self.dir],
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "logs", "stderr"), "w"),
        )
        wait_port((UPSTREAM_IP, self.plain), proc=self.proc)
        wait_port((UPSTREAM_IP, self.tls), proc=self.proc)

    def requests(self):
        """Every request nginx logged so far."""
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class Cordon:
    """cordon on a configuration of the test's: the proxy on 127.0.0.1, sandbox `s` (token TOKEN) under policy
    `p`, which allows `up.test` (127.0.0.2) on `ports` and `rules` (YAML flow mappings); `hosts` adds to
    `network.hosts`, `listen_extra` to `listen`, `extra` is more top-level YAML."""

    def __init__(self, folder, ports, extra="", listen_extra="", roots=(), hosts="", rules=()):
        self.dir = folder
        self.port = free_port()
        digest = hashlib.sha256(TOKEN.encode()).hexdigest()
        allowed = ", ".join(str(p) for p in ports)
        rules = ([f"{{ host: up.test, ports: [{allowed}] }}"] if ports else []) + list(rules)
        rule_lines = "".join(f"      - {r}\n" for r in rules)
        hosts = f"up.test: {UPSTREAM_IP}" + (f", {hosts}" if hosts else "")
        roots_yaml = ", ".join(roots)
        self.config = os.path.join(folder, "cordon.yaml")
        with open(self.config, "w") as f:
            f.write(
                f"""
listen: {{ proxy: 127.0.0.1:{self.port}{listen_extra} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ {hosts} }}
ca: {{ dir: {folder}/cas }}
upstream: {{ extra_roots: [{roots_yaml}] }}
audit: {{ path: {folder}/audit.jsonl }}
control: {{ watch: false, admin_token: {{ file: {folder}/admin-token }} }}
{extra}
sandboxes:
  - {{ id: s, user: alice, token_sha256: {digest}, policy: p }}
  - {{ id: b, user: bob, token_sha256: {digest}, policy: p }}
policies:
  p:
    allow:
{rule_lines}"""
            )
        self.stderr = open(os.path.join(folder, "cordon.stderr"), "w")
        self.proc = subprocess.Popen(
            [BIN, "run", "--config", self.config], stdout=subprocess.DEVNULL, stderr=self.stderr
        )
        wait_port(("127.0.0.1", self.port), proc=self.proc)

    def ca_pem(self, sandbox="s"):
        """The sandbox's CA certificate (`cordon ca export`)."""
        out = subprocess.run(
            [BIN, "ca", "export", "--sandbox", sandbox, "--config", self.config],
            capture_output=True,
            timeout=30,
            check=True,
        )
        return out.stdout.decode()

    def auth(self, sandbox="s"):
        """The Proxy-Authorization header line of `sandbox` (`s`, or `b`: the bystander)."""
        raw = base64.b64encode(f"{sandbox}:{TOKEN}".encode()).decode()
        return f"Proxy-Authorization: Basic {raw}\r\n"

    def rss_kib(self):
        """The cordon process's resident memory (KiB), from /proc."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise SystemExit("cordon has no VmRSS (it exited?)")

    def alive(self):
        return self.proc.poll() is None

    def connect(self, authority, timeout=10.0, sandbox="s"):
        """A socket to the proxy with `CONNECT authority` (as `sandbox`) answered; (socket, status line)."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{self.auth(sandbox)}\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        return s, head.split(b"\r\n", 1)[0].decode(errors="replace")

    def audit(self):
        """The audit records written so far."""
        try:
            with open(os.path.join(self.dir, "audit.jsonl")) as f:
                text = f.read()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line.strip()]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class Forwarder:
    """A local TCP port that, for each connection, opens `CONNECT authority` through cordon with sandbox `s`'s
    Proxy-Authorization and then splices bytes both ways: what a tool that cannot speak through an
    authenticated proxy connects to instead."""

    def __init__(self, cordon, authority):
        self.cordon = cordon
        self.authority = authority
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.refused = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(client,), daemon=True).start()

    def _one(self, client):
        try:
            up, status = self.cordon.connect(self.authority)
        except OSError:
            client.close()
            return
        if " 200 " not in status + " ":
            self.refused += 1
            client.close()
            up.close()
            return
        up.settimeout(None)
        client.settimeout(None)

        def pipe(a, b):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b.sendall(data)
            except OSError:
                pass
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        threading.Thread(target=pipe, args=(client, up), daemon=True).start()
        pipe(up, client)

    def close(self):
        self.listener.close()


def workdir():
    """A folder for one suite's files, removed when the suite ends (kept with CORDON_SUITES_KEEP=1)."""
    folder = tempfile.mkdtemp(prefix="cordon-suites-")
    if not os.environ.get("CORDON_SUITES_KEEP"):
        atexit.register(shutil.rmtree, folder, True)
    return folder
