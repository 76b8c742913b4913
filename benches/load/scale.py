#!/usr/bin/env python3
"""Scale with sandboxes (#25 item 6): N declared sandboxes, each with its own CA, against one release cordon.

Measures, for one N:
  - startup: from exec to the proxy port answering, and cordon's RSS then;
  - reload: SIGHUP with the N sandboxes declared, until cordon_reloads_total{outcome="ok"} moves;
  - first request of every sandbox to one host (its CA made, a leaf minted for it, TLS, one GET, a new
    upstream connection since the pool is per sandbox), at 50 concurrent connections: sandboxes per second,
    and the RSS held afterwards (pooled connections closed) by N CAs and N leaves;
  - the same again (leaf cache hits), for comparison.

usage: scale.py CORDON_BIN RIG_ROOT N [CONCURRENCY]
Needs the rig's nginx on 127.0.0.1:18443 (benches/load/rig/start.sh). Prints one line of key=value.
"""
import asyncio
import hashlib
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from idle import rss_kib  # noqa: E402  (the harness's one reading of a process's memory)

PROXY, ADMIN = 14229, 14230


def reloads_ok():
    text = urllib.request.urlopen(f"http://127.0.0.1:{ADMIN}/metrics", timeout=5).read().decode()
    return sum(int(n) for n in re.findall(r'cordon_reloads_total\{[^}]*outcome="ok"[^}]*\} (\d+)', text))


def config(work, root, n):
    lines = [
        f"listen: {{ proxy: 127.0.0.1:{PROXY}, admin: 127.0.0.1:{ADMIN} }}",
        f"audit: {{ path: {work}/audit.jsonl }}",
        f"control: {{ admin_token: {{ file: {work}/admin-token }} }}",
        f"ca: {{ dir: {work}/cas }}",
        # Pooled upstream connections (one per sandbox) close 1 s after use, so the memory measured after the
        # first requests is what the sandboxes' CAs and leaves hold, not idle sockets.
        f"upstream: {{ extra_roots: [{root}/ca/upstream-ca.pem], pool_idle: 1s }}",
        'network: { allow_cidrs: ["127.0.0.0/8"], hosts: { upstream.test: 127.0.0.1 } }',
        "limits:",
        "  max_connections: 60000",
        "sandboxes:",
    ]
    for i in range(n):
        digest = hashlib.sha256(f"tok-{i}".encode()).hexdigest()
        lines.append(f"  - {{ id: sb-{i}, user: u-{i % 100}, token_sha256: {digest}, policy: p }}")
    lines += ["policies:", "  p:", "    allow:", "      - { host: upstream.test, ports: [18443] }"]
    return "\n".join(lines) + "\n"


async def first_request(i, ctx, sem):
    import base64

    auth = base64.b64encode(f"sb-{i}:tok-{i}".encode()).decode()
    async with sem:
        r, w = await asyncio.open_connection("127.0.0.1", PROXY)
        w.write(
            f"CONNECT upstream.test:18443 HTTP/1.1\r\nHost: upstream.test:18443\r\n"
            f"Proxy-Authorization: Basic {auth}\r\n\r\n".encode()
        )
        await w.drain()
        head = await r.readuntil(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(head.decode(errors="replace"))
        await w.start_tls(ctx, server_hostname="upstream.test")
        w.write(b"GET /1k.txt HTTP/1.1\r\nHost: upstream.test:18443\r\nConnection: close\r\n\r\n")
        await w.drain()
        body = await r.read()
        if not body.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(body[:100])
        w.close()


async def every_sandbox(n, concurrency):
    # The bench measures cordon's work (a CA and a leaf per sandbox), not the client's verification.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    sem = asyncio.Semaphore(concurrency)
    start = time.monotonic()
    await asyncio.gather(*(first_request(i, ctx, sem) for i in range(n)))
    return time.monotonic() - start


def main():
    binary, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "cordon.yaml")
        with open(path, "w") as f:
            f.write(config(work, root, n))
        started = time.monotonic()
        proc = subprocess.Popen([binary, "run", "--config", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            import socket

            while True:
                if proc.poll() is not None:
                    raise RuntimeError(proc.stderr.read().decode())
                try:
                    socket.create_connection(("127.0.0.1", PROXY), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.01)
            startup = time.monotonic() - started
            rss_start = rss_kib(proc.pid)

            before = reloads_ok()
            t = time.monotonic()
            proc.send_signal(signal.SIGHUP)
            while reloads_ok() == before:
                if time.monotonic() - t > 120:
                    raise RuntimeError("no reload within 120 s")
                time.sleep(0.005)
            reload = time.monotonic() - t

            first = asyncio.run(every_sandbox(n, concurrency))
            time.sleep(3)
            rss_after = rss_kib(proc.pid)
            again = asyncio.run(every_sandbox(n, concurrency))
            print(
                f"sandboxes={n} startup_s={startup:.3f} rss_start_kib={rss_start} reload_s={reload:.3f} "
                f"first_requests_per_s={n / first:.0f} again_per_s={n / again:.0f} rss_after_kib={rss_after} "
                f"per_sandbox_kib={(rss_after - rss_start) / n:.1f}"
            )
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
