"""Request smuggling through cordon to nginx. No maintained smuggling scanner on PyPI runs offline against a
proxy that needs Proxy-Authorization (smuggler and h2csmuggler are GitHub scripts, not packages; the PyPI
names that look like them are unrelated), so this is the probe set, written with raw sockets and hpack.

Every probe is one client request carrying a second request (`/smuggled`) that a parser disagreeing with
cordon's would see. It is sent on the three ways in: the proxy port (absolute-form), inside an intercepted
CONNECT over HTTP/1.1, and inside an intercepted CONNECT over h2, which cordon sends on to nginx over
HTTP/1.1 (the h2 -> HTTP/1.1 downgrade). For each: nginx's access log must show at most the one request the
client made and never `/smuggled`; an ambiguous probe must be refused by cordon (nginx sees nothing); a
legal one must reach nginx exactly once; and the connection cordon pools to nginx must still answer the
next request right."""

import pathlib
import socket
import ssl
import sys
import time

import hpack
from hyperframe.frame import DataFrame, Frame, GoAwayFrame, HeadersFrame, RstStreamFrame, SettingsFrame

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rig  # noqa: E402

SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: up.test\r\n\r\n"

# (name, class, head lines after the request line and Host, body); the request line and Host are added per way
# in. Classes: HEAD, ambiguous framing in the head, which cordon must refuse before nginx sees anything; BODY, a
# head that is fine and a body that breaks its own framing, which cordon cannot refuse before it has forwarded
# the head (it streams bodies) but must cut off: nginx sees at most the one request, never /smuggled, and the
# client gets 400 (or the upstream's answer, if it answered before the body broke), never a 5xx; LEGAL, which
# must reach nginx exactly once.
HEAD, BODY, LEGAL = "head", "body", "legal"
H1_PROBES = [
    ("CL.TE: Content-Length and chunked", HEAD,
     ["Content-Length: 6", "Transfer-Encoding: chunked"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.CL: chunked and Content-Length", HEAD,
     ["Transfer-Encoding: chunked", "Content-Length: 4"], b"5c\r\n" + SMUGGLED + b"\r\n0\r\n\r\n"),
    ("TE.TE: xchunked", HEAD, ["Transfer-Encoding: xchunked", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: space before the colon", HEAD,
     ["Transfer-Encoding : chunked", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: tab before the value, with Content-Length", HEAD,
     ["Transfer-Encoding:\tchunked", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: vertical tab before the value", HEAD,
     ["Transfer-Encoding:\x0bchunked", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: chunked then a second Transfer-Encoding", HEAD,
     ["Transfer-Encoding: chunked", "Transfer-Encoding: identity"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: chunked, identity", HEAD, ["Transfer-Encoding: chunked, identity"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: identity, chunked with Content-Length", HEAD,
     ["Transfer-Encoding: identity, chunked", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: lowercase name, uppercase value, with Content-Length", HEAD,
     ["transfer-encoding: CHUNKED", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: obs-fold hides chunked", HEAD,
     ["X-Fold: a", " Transfer-Encoding: chunked", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: obs-fold continues Transfer-Encoding", HEAD,
     ["Transfer-Encoding: x", " chunked", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: quoted chunked", HEAD, ['Transfer-Encoding: "chunked"', "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("TE.TE: chunked with a trailing NUL", HEAD,
     ["Transfer-Encoding: chunked\x00", "Content-Length: 4"], b"0\r\n\r\n" + SMUGGLED),
    ("CL: two different values", HEAD, ["Content-Length: 4", "Content-Length: 44"], b"abcd" + SMUGGLED),
    ("CL: a list of different values", HEAD, ["Content-Length: 4, 44"], b"abcd" + SMUGGLED),
    ("CL: a plus sign", HEAD, ["Content-Length: +44"], b"abcd" + SMUGGLED),
    ("CL: negative", HEAD, ["Content-Length: -1"], b"abcd" + SMUGGLED),
    ("CL: hexadecimal", HEAD, ["Content-Length: 0x2c"], b"abcd" + SMUGGLED),
    ("CL: overflowing 64 bits", HEAD, ["Content-Length: 18446744073709551620"], b"abcd" + SMUGGLED),
    ("CL: space inside the value", HEAD, ["Content-Length: 4 4"], b"abcd" + SMUGGLED),
    ("chunk size overflowing 64 bits", BODY,
     ["Transfer-Encoding: chunked"], b"10000000000000005\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
    ("chunk size with a 0x prefix", BODY, ["Transfer-Encoding: chunked"], b"0x5\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
    ("chunk size negative", BODY, ["Transfer-Encoding: chunked"], b"-5\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
    ("chunk lines ended by bare LF", BODY, ["Transfer-Encoding: chunked"], b"5\nhello\n0\n\n" + SMUGGLED),
    ("chunk data longer than its size", BODY, ["Transfer-Encoding: chunked"], b"3\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
    ("header line ended by bare CR", HEAD, ["X-A: b\rTransfer-Encoding: chunked", "Content-Length: 4"],
     b"0\r\n\r\n" + SMUGGLED),
    ("chunked in HTTP/1.0", HEAD, ["Transfer-Encoding: chunked"], b"0\r\n\r\n" + SMUGGLED),
    # Legal forms: cordon may pass them, and then nginx must see exactly the one request.
    ("legal: Content-Length with leading zeros", LEGAL, ["Content-Length: 0004"], b"abcd"),
    # RFC 9110 §8.6 lets a recipient take `4, 4` as 4 or refuse it; cordon refuses (invalid_content_length).
    ("CL: a list of the same value", HEAD, ["Content-Length: 4, 4"], b"abcd"),
    ("legal: chunked with an extension", LEGAL, ["Transfer-Encoding: chunked"], b"4;ext=1\r\nabcd\r\n0\r\n\r\n"),
    ("legal: chunked, lowercase name and uppercase value", LEGAL, ["transfer-encoding: CHUNKED"],
     b"4\r\nabcd\r\n0\r\n\r\n"),
    ("legal: chunked with a trailer", LEGAL, ["Transfer-Encoding: chunked"], b"4\r\nabcd\r\n0\r\nX-T: 1\r\n\r\n"),
    ("legal: plain Content-Length", LEGAL, ["Content-Length: 4"], b"abcd"),
]

# (name, header list beyond the pseudo-headers, DATA, whether the headers are malformed per RFC 9113 §8.2).
H2_PROBES = [
    ("h2: content-length smaller than the DATA", [("content-length", "4")], b"abcd" + SMUGGLED, True),
    ("h2: content-length larger than the DATA", [("content-length", "400")], b"abcd", True),
    ("h2: transfer-encoding chunked", [("transfer-encoding", "chunked")], b"0\r\n\r\n" + SMUGGLED, True),
    ("h2: connection-specific header", [("connection", "keep-alive")], b"", True),
    ("h2: CRLF in a header value", [("x-a", "b\r\nTransfer-Encoding: chunked")], b"0\r\n\r\n" + SMUGGLED, True),
    ("h2: LF in a header value", [("x-a", "b\nContent-Length: 0")], b"", True),
    ("h2: CRLF in a header name", [("x-a\r\nx-b", "c")], b"", True),
    ("h2: uppercase header name", [("X-Upper", "c")], b"", True),
    ("h2: colon in a header name", [("x:y", "c")], b"", True),
    ("h2: NUL in a header value", [("x-a", "b\x00c")], b"", True),
    ("h2: legal content-length", [("content-length", "4")], b"abcd", False),
]
H2_PATH_PROBES = [
    ("h2: CRLF and a request in :path", "/p HTTP/1.1\r\nHost: up.test\r\n\r\nGET /smuggled"),
    ("h2: space in :path", "/p /smuggled"),
]


def read_all(s, seconds=3.0):
    """Everything the peer sends until it closes or stays quiet for `seconds`."""
    s.settimeout(seconds)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (OSError, ssl.SSLError):
        pass
    return out


def statuses(raw):
    return [int(line.split(b" ")[1]) for line in raw.split(b"\r\n") if line.startswith(b"HTTP/1.") and
            len(line.split(b" ")) > 1 and line.split(b" ")[1].isdigit()]


class Ways:
    """The three ways a probe goes in."""

    def __init__(self, cordon, nginx, ca_file):
        self.cordon, self.nginx, self.ca_file = cordon, nginx, ca_file

    def h1_plain(self, tag, version, lines, body):
        authority = f"up.test:{self.nginx.plain}"
        head = f"POST http://{authority}/{tag} {version}\r\nHost: {authority}\r\n{self.cordon.auth()}"
        raw = head.encode() + "".join(f"{line}\r\n" for line in lines).encode("latin-1") + b"Connection: close\r\n\r\n" + body
        s = socket.create_connection(("127.0.0.1", self.cordon.port), timeout=5)
        s.sendall(raw)
        out = read_all(s)
        s.close()
        return statuses(out)

    def tls(self, alpn):
        authority = f"up.test:{self.nginx.tls}"
        s, status = self.cordon.connect(authority)
        if " 200 " not in status + " ":
            raise SystemExit(f"CONNECT {authority}: {status}")
        ctx = ssl.create_default_context(cafile=self.ca_file)
        ctx.set_alpn_protocols([alpn])
        return ctx.wrap_socket(s, server_hostname="up.test"), authority

    def h1_intercepted(self, tag, version, lines, body):
        t, authority = self.tls("http/1.1")
        head = f"POST /{tag} {version}\r\nHost: {authority}\r\n"
        raw = head.encode() + "".join(f"{line}\r\n" for line in lines).encode("latin-1") + b"Connection: close\r\n\r\n" + body
        t.sendall(raw)
        out = read_all(t)
        t.close()
        return statuses(out)

    def h2(self, path, headers, data):
        """One h2 request; its :status, or how the stream or connection ended."""
        t, authority = self.tls("h2")
        enc = hpack.Encoder()
        block = enc.encode([(":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", path)],
                           huffman=False)
        # Raw literal fields (never indexed, no Huffman), so that hpack does not refuse what it would not send.
        for name, value in headers:
            n, v = name.encode("latin-1"), value.encode("latin-1")
            block += b"\x10" + bytes([len(n)]) + n + bytes([len(v)]) + v
        h = HeadersFrame(1, block)
        h.flags.add("END_HEADERS")
        frames = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize()
        if data:
            d = DataFrame(1, data)
            d.flags.add("END_STREAM")
            frames += h.serialize() + d.serialize()
        else:
            h.flags.add("END_STREAM")
            frames += h.serialize()
        t.sendall(frames)
        dec = hpack.Decoder()
        buf, result = b"", None
        t.settimeout(3)
        until = time.monotonic() + 5
        while result is None and time.monotonic() < until:
            try:
                chunk = t.recv(65536)
            except (OSError, ssl.SSLError):
                break
            if not chunk:
                result = "closed"
                break
            buf += chunk
            while len(buf) >= 9 and result is None:
                frame, length = Frame.parse_frame_header(memoryview(buf[:9]))
                if len(buf) < 9 + length:
                    break
                frame.parse_body(memoryview(buf[9 : 9 + length]))
                buf = buf[9 + length :]
                if isinstance(frame, HeadersFrame) and frame.stream_id == 1:
                    result = int(dict(dec.decode(frame.data)).get(":status", 0))
                elif isinstance(frame, RstStreamFrame) and frame.stream_id == 1:
                    result = f"reset {frame.error_code}"
                elif isinstance(frame, GoAwayFrame):
                    result = f"goaway {frame.error_code}"
        t.close()
        return [result]


def main():
    cases = rig.Cases("smuggling")
    folder = rig.workdir()
    ca = rig.TestCa()
    roots = f"{folder}/upstream-ca.pem"
    with open(roots, "w") as f:
        f.write(ca.pem())
    nginx = rig.Nginx(folder, ca)
    cordon = rig.Cordon(folder, [nginx.plain, nginx.tls], roots=[roots], extra=rig.UNLIMITED)
    try:
        ca_file = f"{folder}/sandbox-ca.pem"
        with open(ca_file, "w") as f:
            f.write(cordon.ca_pem())
        ways = Ways(cordon, nginx, ca_file)
        n = 0

        def judge(name, tag, answered, kind):
            time.sleep(0.2)  # nginx writes its log line when the request ends
            seen = [r for r in nginx.requests() if r["uri"].startswith(f"/{tag}")]
            smuggled = [r for r in nginx.requests() if "smuggled" in r["uri"]]
            refused = bool(answered) and (answered[0] in (400, 411, 413, 431, 501, 505) or
                                          isinstance(answered[0], str))
            if kind == HEAD:
                ok = refused and not seen
                want = "refused by cordon, nginx saw nothing"
            elif kind == BODY:
                ok = len(seen) <= 1 and bool(answered) and (answered[0] == 400 or (answered[0] == 200 and seen))
                want = "cut off: nginx saw at most the one request, the client 400 (never a 5xx)"
            else:
                ok = len(seen) == 1 and answered[:1] == [200]
                want = "nginx saw it exactly once and answered"
            cases.check(f"{name}: {want} (cordon answered {answered[:1]})", ok and not smuggled, f"cordon answered {answered}, nginx saw "
                        f"{[(r['method'], r['uri'], r['cl'], r['te']) for r in seen]}, smuggled {smuggled}")
            # The next request on the same way reaches nginx alone and is answered: no desynchronised pool.
            control = f"c{tag}"
            got = ways.h1_plain(control, "HTTP/1.1", ["Content-Length: 0"], b"")
            time.sleep(0.1)
            follow = [r["uri"] for r in nginx.requests() if r["uri"].startswith(f"/{control}")]
            cases.check(f"{name}: the next request is answered alone", got[:1] == [200] and len(follow) == 1,
                        f"{got} {follow}")

        for name, kind, lines, body in H1_PROBES:
            version = "HTTP/1.0" if "HTTP/1.0" in name else "HTTP/1.1"
            for way, send in [("proxy port", ways.h1_plain), ("intercepted HTTP/1.1", ways.h1_intercepted)]:
                n += 1
                tag = f"p{n}"
                judge(f"{way}: {name}", tag, send(tag, version, lines, body), kind)
        for name, headers, data, malformed in H2_PROBES:
            n += 1
            tag = f"p{n}"
            judge(f"intercepted h2 -> HTTP/1.1: {name}", tag, ways.h2(f"/{tag}", headers, data), HEAD if malformed else LEGAL)
        for name, path in H2_PATH_PROBES:
            n += 1
            tag = f"p{n}"
            judge(f"intercepted h2 -> HTTP/1.1: {name}", tag, ways.h2(path.replace("/p", f"/{tag}", 1), [], b""), HEAD)
        cases.check("cordon still runs", cordon.alive())
    finally:
        cordon.stop()
        nginx.stop()
    cases.done()


if __name__ == "__main__":
    main()
