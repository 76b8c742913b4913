#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (see docs/src/fuzzing.md).

Most seeds are written out here; the ClientHellos are captured from real clients (`openssl s_client`, `curl`)
connecting to a local socket, and the DNS queries from `dig` sending to one. Run from anywhere:
`python3 fuzz/seeds.py`. Files are named after what they hold; rerunning rewrites them (captured
ClientHellos differ in their random bytes each time).
"""

import base64
import pathlib
import shutil
import socket
import struct
import subprocess
import threading

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
REPO = HERE.parent


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def framing():
    crlf = lambda s: s.replace("\n", "\r\n")
    write("framing", "get", crlf("GET http://example.com/ HTTP/1.1\nHost: example.com\n\n"))
    write("framing", "post-length", crlf("POST /upload HTTP/1.1\nHost: a\nContent-Length: 5\n\n") + "hello")
    write(
        "framing",
        "post-chunked-trailers",
        crlf("POST / HTTP/1.1\nHost: a\nTransfer-Encoding: chunked\n\n5;ext=1\nhello\n0\nX-Sum: 1\n\n"),
    )
    write(
        "framing",
        "pipelined",
        crlf("GET /1 HTTP/1.1\nHost: a\n\nHEAD /2 HTTP/1.1\nHost: a\n\nPOST /3 HTTP/1.1\nHost: a\ncontent-length: 2\n\nokGET /4 HTTP/1.0\n\n"),
    )
    write("framing", "connect", crlf("CONNECT example.com:443 HTTP/1.1\nHost: example.com:443\n\n") + "\x16\x03\x01")
    write(
        "framing",
        "websocket-upgrade",
        crlf("GET /ws HTTP/1.1\nHost: a\nConnection: Upgrade\nUpgrade: websocket\nSec-WebSocket-Version: 13\n\n")
        + "\x81\x05hello",
    )
    write(
        "framing",
        "smuggle-cl-te",
        crlf("POST / HTTP/1.1\nHost: a\nContent-Length: 4\nTransfer-Encoding: chunked\n\n0\n\nGET /admin HTTP/1.1\n\n"),
    )
    write("framing", "smuggle-te-obfuscated", crlf("POST / HTTP/1.1\nHost: a\nTransfer-Encoding: xchunked\n\n"))
    write("framing", "duplicate-length", crlf("POST / HTTP/1.1\nContent-Length: 1\nContent-Length: 1\n\nx"))
    write("framing", "bare-lf", "GET / HTTP/1.1\nHost: a\n\n")
    write("framing", "obs-fold", crlf("GET / HTTP/1.1\nHost: a\nX: b\n c\n\n"))


def target():
    for name, text in [
        ("absolute", "http://example.com/path?q=1"),
        ("absolute-port", "http://EXAMPLE.com.:8080/"),
        ("absolute-v6", "http://[2001:db8::1]:8080/x"),
        ("absolute-https", "https://example.com/"),
        ("absolute-userinfo", "http://user:pw@example.com/"),
        ("authority", "example.com:443"),
        ("authority-v4", "93.184.215.14:443"),
        ("authority-v6", "[::1]:8443"),
        ("authority-zone", "[fe80::1%25eth0]:443"),
        ("authority-bad-port", "example.com:0443"),
        ("host-bare", "Example.COM"),
        ("host-label-underscore", "_dmarc.example.com"),
        ("host-unbracketed-v6", "2001:db8::1"),
        ("host-odd-v4", "0x7f.1"),
        ("path", "/a/b%2fc;x=1/d"),
        ("path-dots", "/public/%2e%2e/admin"),
    ]:
        write("target", name, text)


def proxy_auth():
    b64 = lambda s: base64.b64encode(s.encode()).decode()
    for name, value in [
        ("basic-fuzz", "Basic " + b64("fuzz:fuzz-token")),
        ("basic-demo-spaces", "  basic   " + b64("demo:demo-token") + "\t"),
        ("basic-colon-in-token", "BASIC " + b64("a:b:c")),
        ("basic-no-colon", "Basic " + b64("nocolon")),
        ("basic-signed", "Basic " + b64("sb1:eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJzYjEifQ.c2ln")),
        ("basic-unpadded", "Basic " + b64("fuzz:fuzz-token").rstrip("=")),
        ("bearer", "Bearer abc.def"),
    ]:
        write("proxy_auth", name, value)


def ip_guard():
    v4 = lambda a: bytes([0]) + socket.inet_pton(socket.AF_INET, a)
    v6 = lambda a: bytes([1]) + socket.inet_pton(socket.AF_INET6, a)
    for name, data in [
        ("v4-public", v4("93.184.215.14")),
        ("v4-metadata", v4("169.254.169.254")),
        ("v4-private-allowed", v4("10.1.2.3") + v4("10.0.0.0") + bytes([8])),
        ("v4-metadata-allowed", v4("169.254.169.254") + v4("0.0.0.0") + bytes([0])),
        ("v6-public", v6("2606:4700::1111")),
        ("v6-mapped-metadata", v6("::ffff:169.254.169.254")),
        ("v6-6to4-allowed", v6("2002:a9fe:a9fe::1") + v6("2002::") + bytes([16])),
        ("v6-teredo", v6("2001:0:4136:e378:8000:63bf:3fff:fdd2")),
        ("v6-nat64", v6("64:ff9b::a00:1")),
        ("v6-metadata", v6("fd00:ec2::254") + v6("fd00::") + bytes([8])),
    ]:
        write("ip_guard", name, data)


def secrets():
    def seed(secret_list, pieces):
        out = bytes([len(secret_list) - 1])
        for s in secret_list:
            out += bytes([len(s) - 8]) + s
        for p in pieces:
            out += p
        return out

    text = lambda s: bytes([0, len(s)]) + s
    secret, form, upper, head, tail, prefix, cut = (
        lambda i: bytes([1, i]),
        lambda i, f: bytes([2, i, f]),
        lambda i: bytes([3, i]),
        lambda i, n: bytes([4, i, n]),
        lambda i, n: bytes([5, i, n]),
        bytes([6]),
        bytes([7]),
    )
    key, token = b"sk-live-4f9a1c7e2b8d6a03", b"ghp_0123456789abcdefABCDEF"
    for name, data in [
        ("plain", seed([key], [text(b"Authorization: Bearer "), secret(0)])),
        ("json-body", seed([key, token], [text(b'{"a":"'), form(0, 3), text(b'","b":"'), form(1, 5), text(b'"}')])),
        ("split-frames", seed([key], [text(b"x="), head(0, 10), cut, tail(0, 10), cut, text(b"&y=1")])),
        ("upper-and-placeholder", seed([key], [upper(0), text(b" "), prefix, text(b"0123456789abcdef0123456789abcdef")])),
        ("percent-form", seed([b"p@ss/w0rd+key"], [text(b"pw="), form(0, 1), text(b"%26more")])),
        ("overlapping", seed([b"abcdefgh12", b"12345678xyz"], [text(b"..abcdefgh12345678xyz..")])),
    ]:
        write("secrets", name, data)


def capture_tcp(command, port_holder):
    """The first bytes a client sends to a local TCP socket (it gets no answer and gives up)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port_holder.append(server.getsockname()[1])
    got = []

    def accept():
        conn, _ = server.accept()
        conn.settimeout(3)
        data = b""
        try:
            while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        got.append(data)
        conn.close()

    t = threading.Thread(target=accept)
    t.start()
    subprocess.run(command(port_holder[0]), stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    t.join(5)
    server.close()
    return got[0] if got else b""


def sni():
    if shutil.which("openssl"):
        hello = capture_tcp(
            lambda p: ["openssl", "s_client", "-connect", f"127.0.0.1:{p}", "-servername", "example.com"], []
        )
        write("sni", "openssl-tls13", hello)
        hello = capture_tcp(
            lambda p: ["openssl", "s_client", "-connect", f"127.0.0.1:{p}", "-servername", "API.GitHub.com",
                       "-tls1_2"], []
        )
        write("sni", "openssl-tls12-upper", hello)
        hello = capture_tcp(lambda p: ["openssl", "s_client", "-connect", f"127.0.0.1:{p}", "-noservername"], [])
        write("sni", "openssl-no-sni", hello)
    if shutil.which("curl"):
        hello = capture_tcp(
            lambda p: ["curl", "-s", "--max-time", "3", "--resolve", f"pypi.org:{p}:127.0.0.1", f"https://pypi.org:{p}/"],
            [],
        )
        write("sni", "curl", hello)
    write("sni", "http-not-tls", b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")


def dns_query():
    def query(name, qtype, qid=0x1234, flags=0x0100):
        q = struct.pack(">HHHHHH", qid, flags, 1, 0, 0, 0)
        for label in name.split("."):
            q += bytes([len(label)]) + label.encode()
        return q + b"\0" + struct.pack(">HH", qtype, 1)

    write("dns_query", "a-allowed", query("example.com", 1))
    write("dns_query", "aaaa-upper", query("WWW.Example.COM", 28))
    write("dns_query", "txt", query("example.com", 16))
    write("dns_query", "any", query("example.com", 255))
    write("dns_query", "ip-as-name", query("169.254.169.254", 1))
    write("dns_query", "notify-opcode", query("example.com", 1, flags=0x2000))
    compressed = struct.pack(">HHHHHH", 7, 0x0100, 2, 0, 0, 0) + b"\x01a\x00\x00\x01\x00\x01" + b"\xc0\x0c\x00\x1c\x00\x01"
    write("dns_query", "two-questions-compressed", compressed)
    if shutil.which("dig"):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(5)
        port = sock.getsockname()[1]
        proc = subprocess.Popen(
            ["dig", "@127.0.0.1", "-p", str(port), "api.github.com", "AAAA", "+tries=1", "+time=1"],
            stdout=subprocess.DEVNULL,
        )
        try:
            write("dns_query", "dig-aaaa-edns-cookie", sock.recv(4096))
        finally:
            proc.wait()
            sock.close()


def config():
    write("config", "cordon.yaml", (REPO / "config" / "cordon.yaml").read_bytes())
    write("config", "empty.yaml", "")
    write(
        "config",
        "errors.yaml",
        "listen:\n  proxy: nowhere\ntimeouts:\n  connect: 0s\npolicies:\n  p:\n    allow:\n      - host: '[::1'\n"
        "        ports: [0]\nunknown_key: 1\n",
    )
    write("config", "anchors.yaml", "a: &a [1, 2]\nb: *a\npolicies: {p: {allow: [{host: example.com, methods: [GET]}]}}\n")
    write("config", "bad-yaml.yaml", "policies:\n  - : [\n")


def websocket():
    """WebSocket frames from a client (first byte odd: masked frames) and from a server (even: unmasked)."""

    def frame(opcode, payload, fin=True, mask=None, rsv=0):
        head = bytes([(0x80 if fin else 0) | rsv | opcode])
        n = len(payload)
        m = 0x80 if mask else 0
        if n < 126:
            head += bytes([m | n])
        elif n < 65536:
            head += bytes([m | 126]) + struct.pack(">H", n)
        else:
            head += bytes([m | 127]) + struct.pack(">Q", n)
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            head += mask
        return head + payload

    key = b"\x37\xfa\x21\x3d"
    euro = "€".encode()
    for side, first, mask in [("client", b"\x01", key), ("server", b"\x00", None)]:
        f = lambda *a, **k: frame(*a, mask=mask, **k)
        write("websocket", f"{side}-text", first + f(0x1, b"hello"))
        write("websocket", f"{side}-binary", first + f(0x2, bytes(range(256))))
        write("websocket", f"{side}-fragmented-utf8",
              first + f(0x1, b"a" + euro[:1], fin=False) + f(0x9, b"ping") + f(0x0, euro[1:] + b"b"))
        write("websocket", f"{side}-close", first + f(0x8, struct.pack(">H", 1000) + b"bye"))
        write("websocket", f"{side}-pong-then-text", first + f(0xA, b"") + f(0x1, b"x" * 300))
        write("websocket", f"{side}-not-utf8", first + f(0x1, b"\xff\xfe", fin=False) + f(0x0, b"z"))
        write("websocket", f"{side}-reserved-bit", first + f(0x1, b"rsv", rsv=0x40))
        write("websocket", f"{side}-continuation-first", first + f(0x0, b"orphan"))
        write("websocket", f"{side}-frame-over-limit", first + f(0x2, b"y" * 5000))
        write("websocket", f"{side}-message-over-limit",
              first + b"".join(f(0x2 if i == 0 else 0x0, b"m" * 4000, fin=(i == 4)) for i in range(5)))
    # A client frame sent unmasked, and a server frame masked: both protocol errors for their side.
    write("websocket", "client-unmasked", b"\x01" + frame(0x1, b"plain"))
    write("websocket", "server-masked", b"\x00" + frame(0x1, b"masked", mask=key))


def regressions():
    """What the targets found while they were written (docs/src/fuzzing.md, "Findings"), kept as seeds."""
    write("framing", "found-blank-lines-then-bad-head", b"\n\r\nH /\n\xc51POSa.")
    write("proxy_auth", "found-nbsp-before-scheme", "\u00a0Basic " + base64.b64encode(b"fuzz:fuzz-token").decode())
    write("ip_guard", "found-dummy-prefix", bytes([1]) + socket.inet_pton(socket.AF_INET6, "100::1:a900:0:0:a900"))
    write(
        "dns_query",
        "found-questions-with-pointers",
        bytes.fromhex(
            "8a0922000004000000000000000909090909"
            "0e2d090200000700000007000000010500000000"
            "01c002000000000000000c001c0001"
        ),
    )
    write(
        "dns_query",
        "found-pointer-into-the-header",
        bytes.fromhex("123401000001000000000000" "076578000000000001c002" "00010001"),
    )
    write("config", "found-two-documents.yaml", "\n  \n!\n  \n!e")


for make in [framing, target, proxy_auth, ip_guard, secrets, sni, dns_query, config, websocket, regressions]:
    make()
