"""HTTP/2 abuse through cordon's interception, scripted with the `h2` library's framing (hyperframe, hpack): a
sandbox that CONNECTs to an allowed host, negotiates h2 over the leaf its CA mints, and then misbehaves. For
each attack: cordon closes the connection or answers as RFC 9113 says, a bystander (another sandbox, its own
connection) is served during and after, and cordon's resident memory stays bounded.

Attacks: CONTINUATION flood; RST_STREAM flood (rapid reset); malformed streams that cordon resets, one after
another; SETTINGS flood; PING flood; WINDOW_UPDATE overflow
(connection and stream); DATA beyond the window; a window of 0 that never opens (the response stalls); HPACK
bombs (one huge header, and one dynamic-table entry referenced thousands of times); too many concurrent
streams."""

import pathlib
import socket
import ssl
import sys
import threading
import time

import hpack
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rig  # noqa: E402

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# RFC 9113 §7 error codes.
NO_ERROR, PROTOCOL_ERROR, FLOW_CONTROL_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR, ENHANCE_YOUR_CALM = (
    0x0, 0x1, 0x3, 0x7, 0x8, 0x9, 0xB)
# How much more resident memory an attack may leave cordon with.
RSS_GROWTH_KIB = 64 * 1024


class H2:
    """One h2 connection to up.test through cordon's interception, spoken frame by frame."""

    def __init__(self, cordon, authority, ca_file, settings=None, sandbox="s"):
        self.sock, status = cordon.connect(authority, sandbox=sandbox)
        if " 200 " not in status + " ":
            raise SystemExit(f"CONNECT {authority}: {status}")
        ctx = ssl.create_default_context(cafile=ca_file)
        ctx.set_alpn_protocols(["h2"])
        self.tls = ctx.wrap_socket(self.sock, server_hostname=authority.split(":")[0])
        if self.tls.selected_alpn_protocol() != "h2":
            raise SystemExit(f"cordon did not negotiate h2: {self.tls.selected_alpn_protocol()}")
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.buf = b""
        self.server_settings = {}
        self.goaway = None
        self.resets = {}
        self.responses = {}
        self.closed = False
        self.next_stream = 1
        s = SettingsFrame(0)
        for k, v in (settings or {}).items():
            s.settings[k] = v
        self.send(PREFACE + s.serialize())

    def send(self, data):
        self.tls.sendall(data)

    def stream(self):
        sid = self.next_stream
        self.next_stream += 2
        return sid

    def headers_block(self, authority, method="GET", path="/", extra=()):
        # No Huffman coding: pure-Python Huffman of a megabyte takes minutes.
        return self.encoder.encode(
            [(":method", method), (":scheme", "https"), (":authority", authority), (":path", path), *extra],
            huffman=False,
        )

    def request(self, authority, method="GET", path="/", end=True, extra=()):
        sid = self.stream()
        f = HeadersFrame(sid, self.headers_block(authority, method, path, extra))
        f.flags.add("END_HEADERS")
        if end:
            f.flags.add("END_STREAM")
        self.send(f.serialize())
        return sid

    def read(self, seconds):
        """Read frames for up to `seconds` (or until the connection closes), answering SETTINGS."""
        until = time.monotonic() + seconds
        while not self.closed and time.monotonic() < until:
            self.tls.settimeout(max(0.01, until - time.monotonic()))
            try:
                chunk = self.tls.recv(65536)
            except (socket.timeout, TimeoutError):
                break
            except (ssl.SSLError, OSError):
                self.closed = True
                break
            if not chunk:
                self.closed = True
                break
            self.buf += chunk
            while len(self.buf) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(self.buf[:9]))
                if len(self.buf) < 9 + length:
                    break
                frame.parse_body(memoryview(self.buf[9 : 9 + length]))
                self.buf = self.buf[9 + length :]
                self.on(frame)

    def on(self, frame):
        if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
            self.server_settings.update(frame.settings)
            ack = SettingsFrame(0)
            ack.flags.add("ACK")
            try:
                self.send(ack.serialize())
            except OSError:
                self.closed = True
        elif isinstance(frame, GoAwayFrame):
            self.goaway = frame.error_code
        elif isinstance(frame, RstStreamFrame):
            self.resets[frame.stream_id] = frame.error_code
        elif isinstance(frame, HeadersFrame):
            try:
                headers = dict(self.decoder.decode(frame.data))
                self.responses[frame.stream_id] = headers.get(":status", headers.get(b":status"))
            except hpack.HPACKError:
                pass

    def close(self):
        try:
            self.tls.close()
        except OSError:
            pass


class Bystander:
    """Another sandbox's requests through its own connection, one after another while an attack runs: each must
    be answered 200 by nginx within 5 s."""

    def __init__(self, cordon, authority, ca_file):
        self.args = (cordon, authority, ca_file)
        self.ok = 0
        self.failed = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def one(self):
        cordon, authority, ca_file = self.args
        start = time.monotonic()
        try:
            c = H2(cordon, authority, ca_file, sandbox="b")
            sid = c.request(authority, path="/bystander")
            while sid not in c.responses and not c.closed and time.monotonic() - start < 5:
                c.read(0.2)
            c.close()
            if c.responses.get(sid) in ("200", b"200"):
                return None
            return f"stream answered {c.responses.get(sid)} (goaway {c.goaway})"
        except (OSError, SystemExit) as e:
            return f"{e}"

    def _run(self):
        while not self.stop.is_set():
            err = self.one()
            if err:
                self.failed.append(err)
            else:
                self.ok += 1
            time.sleep(0.1)

    def finish(self):
        self.stop.set()
        self.thread.join(10)
        return self.ok, self.failed


def closed_or_goaway(c, seconds=5):
    c.read(seconds)
    return c.closed or c.goaway is not None


# Each attack takes (cordon, authority, ca_file) and returns (ok, detail): whether cordon answered as it should.

def continuation_flood(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    sid = c.stream()
    h = HeadersFrame(sid, c.headers_block(authority))
    c.send(h.serialize())
    sent = 0
    junk = hpack.Encoder().encode([("x-junk", "a" * 8000)], huffman=False)
    try:
        for _ in range(4000):  # up to ~32 MB of header block, never ended
            c.send(ContinuationFrame(sid, junk).serialize())
            sent += len(junk)
    except OSError:
        pass
    shut = closed_or_goaway(c)
    c.close()
    return shut and sent < 4000 * len(junk), f"sent {sent} bytes of header block; goaway {c.goaway}, closed {c.closed}"


def rapid_reset(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    sent = 0
    try:
        for _ in range(20000):
            sid = c.request(authority, path="/reset")
            c.send(RstStreamFrame(sid, error_code=CANCEL).serialize())
            sent += 1
    except OSError:
        pass
    shut = closed_or_goaway(c)
    c.close()
    return shut and c.goaway in (None, ENHANCE_YOUR_CALM, PROTOCOL_ERROR), (
        f"{sent} streams opened and reset; goaway {c.goaway}, closed {c.closed}")


def still_answers(c, authority):
    """After a flood of control frames: the connection was closed (or GOAWAY), or it still works: a request on
    it is answered 200 once the client reads what is waiting for it."""
    c.read(2)
    if c.closed or c.goaway is not None:
        return True, f"closed (goaway {c.goaway})"
    try:
        sid = c.request(authority, path="/after-flood")
    except OSError:
        return True, "closed"
    until = time.monotonic() + 10
    while sid not in c.responses and not c.closed and time.monotonic() < until:
        c.read(0.5)
    return c.responses.get(sid) in ("200", b"200"), f"open, then answered {c.responses.get(sid)}"


def malformed_stream_flood(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    sent = 0
    try:
        for _ in range(5000):
            sid = c.stream()
            # A connection-specific header: each stream is malformed (§8.2.2), a stream error cordon resets.
            block = c.headers_block(authority) + b"\x10\x0aconnection\x0akeep-alive"
            f = HeadersFrame(sid, block)
            f.flags.add("END_HEADERS")
            f.flags.add("END_STREAM")
            c.send(f.serialize())
            sent += 1
    except OSError:
        pass
    c.read(5)
    c.close()
    # Each is a stream error (RST_STREAM PROTOCOL_ERROR); past max_local_error_reset_streams, the connection ends.
    ok = (c.closed or c.goaway is not None) and sent < 5000 or c.goaway == ENHANCE_YOUR_CALM
    return ok, f"{sent} malformed streams sent; {len(c.resets)} reset, goaway {c.goaway}, closed {c.closed}"


def settings_flood(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    sent = 0
    try:
        for _ in range(50000):  # never reading the ACKs
            c.send(SettingsFrame(0, settings={SettingsFrame.MAX_CONCURRENT_STREAMS: 100}).serialize())
            sent += 1
    except OSError:
        pass
    # RFC 9113 §6.5.3: each is acknowledged; cordon's peer stops reading, so the answers wait on TCP (nothing
    # grows: see the memory check) and the connection still works when the client reads again.
    ok, how = still_answers(c, authority)
    c.close()
    return ok, f"{sent} SETTINGS frames sent unread; {how}"


def ping_flood(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    sent = 0
    try:
        for i in range(50000):  # never reading the PONGs
            c.send(PingFrame(0, opaque_data=i.to_bytes(8, "big")).serialize())
            sent += 1
    except OSError:
        pass
    # §6.7: each PING is answered; unread answers wait on TCP (h2 keeps one pending), as for SETTINGS.
    ok, how = still_answers(c, authority)
    c.close()
    return ok, f"{sent} PINGs sent unread; {how}"


def window_overflow_connection(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    c.send(WindowUpdateFrame(0, window_increment=2**31 - 1).serialize() * 2)
    c.read(5)
    c.close()
    # RFC 9113 §6.9.1: a connection window above 2^31-1 is a connection error FLOW_CONTROL_ERROR.
    return c.goaway == FLOW_CONTROL_ERROR, f"goaway {c.goaway}, closed {c.closed}"


def window_overflow_stream(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    sid = c.stream()
    h = HeadersFrame(sid, c.headers_block(authority, method="POST"))
    h.flags.add("END_HEADERS")
    # In one write with the HEADERS, so the stream is still open (not yet answered) when they arrive.
    c.send(h.serialize() + WindowUpdateFrame(sid, window_increment=2**31 - 1).serialize() * 2)
    until = time.monotonic() + 5
    while sid not in c.resets and c.goaway is None and not c.closed and time.monotonic() < until:
        c.read(0.2)
    c.close()
    # §6.9.1: on a stream, a stream error FLOW_CONTROL_ERROR (RST_STREAM) — or the whole connection.
    ok = c.resets.get(sid) == FLOW_CONTROL_ERROR or c.goaway == FLOW_CONTROL_ERROR
    return ok, f"resets {c.resets}, goaway {c.goaway}"


def data_beyond_window(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    c.read(1)
    window = c.server_settings.get(SettingsFrame.INITIAL_WINDOW_SIZE, 65535)
    sid = c.request(authority, method="POST", path="/upload", end=False)
    chunk = b"x" * 16384
    sent = 0
    try:
        while sent <= window + 4 * 1024 * 1024:
            c.send(DataFrame(sid, chunk).serialize())
            sent += len(chunk)
    except OSError:
        pass
    c.read(5)
    c.close()
    # §6.9.1: a sender must not exceed the window; a receiver treats it as FLOW_CONTROL_ERROR.
    ok = c.goaway == FLOW_CONTROL_ERROR or c.resets.get(sid) == FLOW_CONTROL_ERROR
    return ok, f"window {window}, sent {sent}; resets {c.resets}, goaway {c.goaway}"


def window_zero_stall(cordon, authority, ca):
    # The client grants no window and never opens it: each response waits, held by cordon.
    c = H2(cordon, authority, ca, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    c.read(1)
    streams = c.server_settings.get(SettingsFrame.MAX_CONCURRENT_STREAMS, 100)
    sids = [c.request(authority, path="/big") for _ in range(streams)]
    c.read(4)
    answered = [s for s in sids if s in c.responses]
    alive = cordon.alive()
    c.close()
    # Nothing in the RFC ends such a connection; what matters is that cordon holds it within bounds (the
    # memory and bystander checks around every attack).
    return alive, f"{len(answered)} of {len(sids)} response heads sent with a window of 0; goaway {c.goaway}"


def huge_header(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    sid = c.stream()
    block = c.headers_block(authority, extra=[("x-big", "b" * (1024 * 1024))])
    frames = [block[i : i + 16384] for i in range(0, len(block), 16384)]
    try:
        c.send(HeadersFrame(sid, frames[0]).serialize())
        for i, part in enumerate(frames[1:]):
            f = ContinuationFrame(sid, part)
            if i == len(frames) - 2:
                f.flags.add("END_HEADERS")
            c.send(f.serialize())
    except OSError:
        pass
    c.read(5)
    c.close()
    # RFC 9113 §10.5.1: a header list over SETTINGS_MAX_HEADER_LIST_SIZE may be answered 431, or the stream or
    # connection closed.
    ok = c.responses.get(sid) in ("431", b"431") or sid in c.resets or c.goaway is not None or c.closed
    return ok, f"status {c.responses.get(sid)}, resets {c.resets}, goaway {c.goaway}, closed {c.closed}"


def hpack_table_bomb(cordon, authority, ca):
    c = H2(cordon, authority, ca)
    sid = c.stream()
    enc = hpack.Encoder()
    first = enc.encode(
        [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", "/"), ("x-bomb", "c" * 4000)],
        huffman=False,
    )
    # Index 62 is the newest dynamic entry (x-bomb); each 1-byte reference is 4 KB more of headers.
    block = first + bytes([0x80 | 62]) * 20000
    frames = [block[i : i + 16384] for i in range(0, len(block), 16384)]
    try:
        f = HeadersFrame(sid, frames[0])
        f.flags.add("END_STREAM")
        if len(frames) == 1:
            f.flags.add("END_HEADERS")
        c.send(f.serialize())
        for i, part in enumerate(frames[1:]):
            f = ContinuationFrame(sid, part)
            if i == len(frames) - 2:
                f.flags.add("END_HEADERS")
            c.send(f.serialize())
    except OSError:
        pass
    c.read(5)
    c.close()
    ok = c.responses.get(sid) in ("431", b"431") or sid in c.resets or c.goaway is not None or c.closed
    return ok, f"~80 MB of headers in {len(block)} bytes: status {c.responses.get(sid)}, resets {c.resets}, goaway {c.goaway}"


def too_many_streams(cordon, authority, ca):
    # A window of 0: no response can finish, so every stream stays open and counts against the limit.
    c = H2(cordon, authority, ca, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    c.read(1)
    limit = c.server_settings.get(SettingsFrame.MAX_CONCURRENT_STREAMS)
    sids = [c.request(authority, path="/big") for _ in range(1000)]
    c.read(3)
    refused = [s for s in sids if c.resets.get(s) in (REFUSED_STREAM, PROTOCOL_ERROR)]
    c.close()
    # §5.1.2: streams over the advertised limit are refused (RST_STREAM REFUSED_STREAM or PROTOCOL_ERROR), or
    # the connection ends.
    ok = limit is not None and limit <= 256 and (len(refused) >= 1000 - limit or c.goaway is not None)
    return ok, f"limit {limit}; {len(refused)} of {len(sids)} refused; goaway {c.goaway}"


def header_limit(cordon, authority, ca):
    """Not an attack: a 40 KB header is within limits.max_request_header_bytes (64 KiB) and passes over h2 as over
    HTTP/1.1 inside the same interception; an 80 KB one is refused by both (RFC 9113 §10.5.1: 431 or a reset)."""
    results = {}
    for size in (40 * 1024, 80 * 1024):
        c = H2(cordon, authority, ca)
        sid = c.stream()
        block = c.headers_block(authority, extra=[("x-size", "h" * size)])
        frames = [block[i : i + 16384] for i in range(0, len(block), 16384)]
        f = HeadersFrame(sid, frames[0])
        f.flags.add("END_STREAM")
        c.send(f.serialize())
        for i, part in enumerate(frames[1:]):
            f = ContinuationFrame(sid, part)
            if i == len(frames) - 2:
                f.flags.add("END_HEADERS")
            c.send(f.serialize())
        until = time.monotonic() + 5
        while sid not in c.responses and sid not in c.resets and not c.closed and time.monotonic() < until:
            c.read(0.5)
        h2 = c.responses.get(sid) or (f"reset {c.resets[sid]}" if sid in c.resets else f"closed {c.goaway}")
        c.close()
        s, _ = cordon.connect(authority)
        t = ssl.create_default_context(cafile=ca).wrap_socket(s, server_hostname=authority.split(":")[0])
        t.sendall(f"GET / HTTP/1.1\r\nHost: {authority}\r\nx-size: {'h' * size}\r\nConnection: close\r\n\r\n".encode())
        t.settimeout(5)
        head = b""
        try:
            while b"\r\n" not in head:
                chunk = t.recv(4096)
                if not chunk:
                    break
                head += chunk
        except OSError:
            pass
        t.close()
        h1 = head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "closed"
        results[size] = (str(h2.decode() if isinstance(h2, bytes) else h2), h1)
    small, big = results[40 * 1024], results[80 * 1024]
    ok = small == ("200", "200") and big[1] == "431" and big[0] != "200"
    return ok, f"40 KB header: h2 {small[0]}, HTTP/1.1 {small[1]}; 80 KB: h2 {big[0]}, HTTP/1.1 {big[1]}"


ATTACKS = [
    ("a header near limits.max_request_header_bytes, h2 as HTTP/1.1", header_limit),
    ("CONTINUATION flood", continuation_flood),
    ("RST_STREAM flood (rapid reset)", rapid_reset),
    ("malformed streams, each reset by cordon", malformed_stream_flood),
    ("SETTINGS flood", settings_flood),
    ("PING flood", ping_flood),
    ("WINDOW_UPDATE overflow (connection)", window_overflow_connection),
    ("WINDOW_UPDATE overflow (stream)", window_overflow_stream),
    ("DATA beyond the window", data_beyond_window),
    ("window 0 that never opens", window_zero_stall),
    ("HPACK: a 1 MB header", huge_header),
    ("HPACK: dynamic table bomb", hpack_table_bomb),
    ("too many concurrent streams", too_many_streams),
]


def main():
    cases = rig.Cases("h2_abuse")
    folder = rig.workdir()
    ca = rig.TestCa()
    roots = f"{folder}/upstream-ca.pem"
    with open(roots, "w") as f:
        f.write(ca.pem())
    nginx = rig.Nginx(folder, ca)
    cordon = rig.Cordon(folder, [nginx.tls], roots=[roots])
    authority = f"up.test:{nginx.tls}"
    try:
        ca_file = f"{folder}/sandbox-ca.pem"
        with open(ca_file, "w") as f:
            f.write(cordon.ca_pem("s") + cordon.ca_pem("b"))
        # Warm up (CA, leaf, upstream pool) so that the first attack's memory is compared like the others'.
        by = Bystander(cordon, authority, ca_file)
        time.sleep(1)
        by.finish()
        for name, attack in ATTACKS:
            before = cordon.rss_kib()
            by = Bystander(cordon, authority, ca_file)
            start = time.monotonic()
            try:
                ok, detail = attack(cordon, authority, ca_file)
            except Exception as e:  # a broken attack is a failed case, and the others still run
                ok, detail = False, f"the attack itself failed: {e!r}"
            took = time.monotonic() - start
            peak = cordon.rss_kib()
            served, failed = by.finish()
            after_by = Bystander(cordon, authority, ca_file)
            time.sleep(0.5)
            served_after, failed_after = after_by.finish()
            after = cordon.rss_kib()
            cases.check(f"{name}: cordon answers as RFC 9113 says", ok, detail)
            print(f"        {detail} ({took:.1f}s)")
            cases.check(f"{name}: cordon still runs", cordon.alive())
            cases.check(f"{name}: a bystander is served during it", served >= 1 and not failed,
                        f"{served} served, failures {failed[:3]}")
            cases.check(f"{name}: and after it", served_after >= 1 and not failed_after,
                        f"{served_after} served, failures {failed_after[:3]}")
            cases.check(f"{name}: memory bounded (RSS {before} -> {peak} -> {after} KiB)",
                        max(peak, after) - before < RSS_GROWTH_KIB, f"grew {max(peak, after) - before} KiB")
    finally:
        cordon.stop()
        nginx.stop()
    cases.done()


if __name__ == "__main__":
    main()
