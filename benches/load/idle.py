#!/usr/bin/env python3
"""Open N idle intercepted connections through cordon and report its resident memory per connection.

Each connection: CONNECT host:port with the sandbox's credentials, a TLS handshake trusting the sandbox's CA,
one request answered (so the connection is fully set up: leaf, inner HTTP server, upstream pool), then idle.

usage: idle.py PID PROXY_PORT AUTH_B64 HOST PORT CA_FILE N
"""
import asyncio
import ssl
import sys


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def one(proxy_port, auth, host, port, ctx, held):
    r, w = await asyncio.open_connection("127.0.0.1", proxy_port)
    w.write(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode())
    await w.drain()
    head = await r.readuntil(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise RuntimeError(head.decode(errors="replace"))
    await w.start_tls(ctx, server_hostname=host)
    w.write(f"GET /1k.txt HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    await w.drain()
    resp = await r.readuntil(b"\r\n\r\n")
    length = 0
    for line in resp.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await r.readexactly(length)
    held.append(w)


async def main():
    pid, proxy_port, auth, host, port, ca, n = sys.argv[1:8]
    n = int(n)
    ctx = ssl.create_default_context(cafile=ca)
    before = rss_kib(pid)
    held = []
    sem = asyncio.Semaphore(200)

    async def guarded():
        async with sem:
            await one(int(proxy_port), auth, host, int(port), ctx, held)

    results = await asyncio.gather(*(guarded() for _ in range(n)), return_exceptions=True)
    failed = [r for r in results if isinstance(r, Exception)]
    await asyncio.sleep(2)
    after = rss_kib(pid)
    ok = len(held)
    per = (after - before) / ok if ok else 0
    print(f"connections={ok} failed={len(failed)} rss_before_kib={before} rss_after_kib={after} per_connection_kib={per:.1f}")
    if failed:
        print(f"first failure: {failed[0]!r}", file=sys.stderr)
    for w in held:
        w.close()


if __name__ == "__main__":
    asyncio.run(main())
