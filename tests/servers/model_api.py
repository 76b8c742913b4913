#!/usr/bin/env python3
"""A local model API for the token-metering tests: it speaks the wire formats of the OpenAI API (chat
completions, responses, embeddings) and the Anthropic API (messages), streaming and not, closely enough that
the official SDKs (PyPI `openai`, `anthropic`; tests/clients/llm_agent.py) parse its answers, with token counts
a test can compute from its own request. Standard library only.

    model_api.py --port P [--host H] [--tls-cert CERT.pem --tls-key KEY.pem] [--key KEY] [--event-delay-ms MS]

It listens on H:P (default 127.0.0.1; P 0 picks a free port), over HTTPS with the given PEM certificate and key
or plain HTTP without them, and prints "READY PORT" (the port it listens on) on stdout once it accepts
connections; SIGTERM stops it.

Endpoints (POST, JSON bodies):

    /v1/chat/completions   OpenAI; "stream": true answers SSE "data: {chunk}" lines ending "data: [DONE]"; the
                           last chunk before [DONE] ("choices": [], "usage": {...}) only with
                           "stream_options": {"include_usage": true}, as the real API does
    /v1/responses          OpenAI; "stream": true answers "event: response.*" events, usage in response.completed
    /v1/embeddings         OpenAI; "encoding_format" "float" (default) or "base64"
    /v1/messages           Anthropic; "stream": true answers message_start, ping, content_block_start,
                           content_block_delta (text_delta) ..., content_block_stop, message_delta, message_stop

and for the test itself (no auth): GET /_seen, every request received so far as a JSON list of
{"method", "path", "headers": {lowercase name: [values in order]}, "body": parsed JSON or null,
"body_text": the body when it is not JSON, "answer": {"status", "usage", "events", "cut"}}; DELETE /_seen
clears it.

Auth, as the real APIs check it: the OpenAI paths want "Authorization: Bearer KEY", /v1/messages wants
"x-api-key: KEY" or "Authorization: Bearer KEY" (the anthropic SDK 2.x sends its api_key so; every key given
must be KEY) and an "anthropic-version" header; KEY is --key (default sk-real-upstream-key). Otherwise 401
(400 for a missing anthropic-version) in that API's error shape, and the request is still recorded.

Token counts (deterministic, so a test can assert exact figures):

    W  = the number of whitespace-separated words in every text of the request: the messages' contents
         (strings, or the "text" of content parts), the Anthropic "system", the responses "instructions" and
         "input", the embeddings "input" (a list of integers counts one token per integer).
    C  = 3 if some word is exactly "cached", else 0: cached input tokens, on top of W.
    CW = 5 if some word is exactly "cachewrite", else 0: tokens written to the cache, on top of W.
    R  = 4 if some word is exactly "reasoning", else 0 (OpenAI chat and responses): reasoning tokens, part of
         the output but never sent as text.
    N  = the request's max_tokens / max_completion_tokens / max_output_tokens if given (capped at 100000),
         else 20: the number of visible output tokens; the text is "w1 w2 ... wN", one word per token.

    chat:        prompt_tokens W+C, cached_tokens C, cache_write_tokens CW, completion_tokens N+R
                 (reasoning_tokens R), total_tokens the sum of prompt and completion
    responses:   input_tokens W+C, cached_tokens C, cache_write_tokens CW, output_tokens N+R
                 (reasoning_tokens R), total_tokens the sum of input and output
    embeddings:  prompt_tokens W, total_tokens W
    messages:    input_tokens W (uncached), cache_read_input_tokens C, cache_creation_input_tokens CW,
                 output_tokens N; when streaming, message_start carries input_tokens W and output_tokens 1 and
                 message_delta the final (cumulative) output_tokens N

Streams send one event per visible output token (N text deltas, each its own HTTP chunk), so max_tokens 200
makes 200 delta events. In all, a chat stream is 1 role chunk + N + 1 finish chunk (+ 1 usage chunk) + [DONE];
a responses stream 4 events (created, in_progress, output_item.added, content_part.added) + N + 4
(output_text.done, content_part.done, output_item.done, completed); a messages stream 3 (message_start, ping,
content_block_start) + N + 3 (content_block_stop, message_delta, message_stop). A word "cutshort" in the request cuts a stream short: after N // 2 deltas the server
closes the connection (TCP FIN, no TLS close_notify, no terminating chunk): no usage chunk, no [DONE], no
response.completed, no message_delta or message_stop. Non-streaming answers ignore "cutshort". Between events
the server waits --event-delay-ms, or the request header x-model-api-delay-ms when given (so tests can keep
streams in flight at once).

The answers echo the request's "model".
"""

import argparse
import base64
import json
import socket
import ssl
import struct
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_OUTPUT = 20
MAX_OUTPUT = 100000
CACHED = 3
CACHE_WRITE = 5
REASONING = 4
CREATED = 1767225600  # a fixed timestamp: answers are reproducible

SEEN = []
SEEN_LOCK = threading.Lock()


# ---- counting -------------------------------------------------------------------------------------------------


def texts(value):
    """Every text a request part carries: strings, the "text"/"content"/"input" of parts, lists of them."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from texts(v)
    elif isinstance(value, dict):
        for key in ("text", "content", "input"):
            if key in value:
                yield from texts(value[key])


def words_of(body, fields):
    words = []
    for field in fields:
        value = body.get(field)
        if field == "input" and isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            words.extend(str(v) for v in value)  # tokens given as integers
            continue
        if field == "input" and isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            for v in value:
                if all(isinstance(t, int) for t in v):
                    words.extend(str(t) for t in v)
                else:
                    words.extend(w for t in texts(v) for w in t.split())
            continue
        for t in texts(value):
            words.extend(t.split())
    return words


class Counts:
    """The token figures of one request (see the module's doc)."""

    def __init__(self, body, fields, limits):
        words = words_of(body, fields)
        self.words = len(words)
        self.cached = CACHED if "cached" in words else 0
        self.cache_write = CACHE_WRITE if "cachewrite" in words else 0
        self.reasoning = REASONING if "reasoning" in words else 0
        self.cut = "cutshort" in words
        self.limited = False
        self.output = DEFAULT_OUTPUT
        for name in limits:
            n = body.get(name)
            if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
                self.output = min(n, MAX_OUTPUT)
                self.limited = True
                break

    def tokens(self):
        """The visible output, one word per token."""
        return [("" if i == 0 else " ") + f"w{i + 1}" for i in range(self.output)]


# ---- the HTTP side --------------------------------------------------------------------------------------------


class Cut(Exception):
    """The stream was cut short on purpose: the connection is closed, nothing more is written."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "model-api-test/1"

    def log_message(self, *args):
        pass

    # -- plumbing

    def send_json(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.record["answer"]["status"] = status

    def start_stream(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        self.record["answer"]["status"] = 200
        self.record["answer"]["events"] = 0

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        self.record["answer"]["events"] += 1
        if self.delay:
            time.sleep(self.delay)

    def event(self, name, obj):
        self.chunk(f"event: {name}\ndata: {json.dumps(obj)}\n\n")

    def data(self, obj):
        self.chunk(f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n")

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def cut(self):
        """Close the connection mid-body: a FIN with no terminating chunk (and, over TLS, no close_notify)."""
        self.record["answer"]["cut"] = True
        self.close_connection = True
        try:
            self.wfile.flush()
            sock = self.connection
            if isinstance(sock, ssl.SSLSocket):
                # SSLSocket.shutdown drops the TLS state and shuts the TCP socket: no close_notify is sent.
                sock.shutdown(socket.SHUT_RDWR)
            else:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        raise Cut()

    def header_values(self):
        out = {}
        for name, value in self.headers.items():
            out.setdefault(name.lower(), []).append(value)
        return out

    def read_body(self):
        length = self.headers.get("content-length")
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
            return raw
        return self.rfile.read(int(length)) if length else b""

    def begin(self):
        raw = self.read_body() if self.command in ("POST", "PUT", "PATCH") else b""
        body, body_text = None, None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body_text = raw.decode("utf-8", "replace")
        self.record = {
            "method": self.command,
            "path": self.path,
            "headers": self.header_values(),
            "body": body,
            "body_text": body_text,
            "answer": {"status": None, "usage": None, "events": None, "cut": False},
        }
        delay = self.headers.get("x-model-api-delay-ms")
        try:
            self.delay = (float(delay) if delay is not None else self.server.event_delay_ms) / 1000.0
        except ValueError:
            self.delay = self.server.event_delay_ms / 1000.0
        return body

    # -- methods

    def do_GET(self):
        if self.path == "/_seen":
            with SEEN_LOCK:
                data = json.dumps(SEEN).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.begin()
        self.remember()
        self.not_found()

    def do_DELETE(self):
        if self.path == "/_seen":
            with SEEN_LOCK:
                SEEN.clear()
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        self.begin()
        self.remember()
        self.not_found()

    def do_POST(self):
        body = self.begin()
        self.remember()
        route = {
            "/v1/chat/completions": ("openai", self.serve_chat),
            "/v1/responses": ("openai", self.serve_responses),
            "/v1/embeddings": ("openai", self.serve_embeddings),
            "/v1/messages": ("anthropic", self.serve_messages),
        }.get(self.path.split("?")[0])
        if route is None:
            return self.not_found()
        dialect, serve = route
        if not self.authorized(dialect):
            return
        if not isinstance(body, dict):
            return self.bad_request(dialect, "the request body is not a JSON object")
        if not isinstance(body.get("model"), str):
            return self.bad_request(dialect, "model: a string is required")
        try:
            serve(body)
        except Cut:
            pass
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def remember(self):
        with SEEN_LOCK:
            SEEN.append(self.record)

    # -- errors, in each API's shape

    def not_found(self):
        if self.path.startswith("/v1/messages"):
            return self.anthropic_error(404, "not_found_error", f"Not found: {self.path}")
        return self.openai_error(404, "invalid_request_error", f"Invalid URL (POST {self.path})", None)

    def bad_request(self, dialect, message):
        if dialect == "anthropic":
            return self.anthropic_error(400, "invalid_request_error", message)
        return self.openai_error(400, "invalid_request_error", message, None)

    def openai_error(self, status, kind, message, code):
        self.send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})

    def anthropic_error(self, status, kind, message):
        request_id = "req_" + uuid.uuid4().hex[:24]
        self.send_json(
            status,
            {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id},
            extra=[("request-id", request_id)],
        )

    def authorized(self, dialect):
        key = self.server.key
        if dialect == "anthropic":
            # The real API takes the key in x-api-key, or as a bearer token (what the anthropic SDK 2.x sends):
            # at least one of them, and every one given must be the key.
            given = (self.headers.get_all("x-api-key") or []) + [
                v.removeprefix("Bearer ") if v.startswith("Bearer ") else None
                for v in self.headers.get_all("authorization") or []
            ]
            if not given or any(v != key for v in given):
                self.anthropic_error(401, "authentication_error", "invalid x-api-key")
                return False
            if not self.headers.get("anthropic-version"):
                self.anthropic_error(400, "invalid_request_error", "anthropic-version: header is required")
                return False
            return True
        given = self.headers.get_all("authorization") or []
        if not given:
            self.openai_error(
                401,
                "invalid_request_error",
                "You didn't provide an API key. You need to provide your API key in an Authorization header "
                "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                None,
            )
            return False
        if given != [f"Bearer {key}"]:
            shown = given[0].removeprefix("Bearer ")
            shown = shown[:3] + "*" * 8 + shown[-4:] if len(shown) > 8 else "*" * len(shown)
            self.openai_error(
                401,
                "invalid_request_error",
                f"Incorrect API key provided: {shown}.",
                "invalid_api_key",
            )
            return False
        return True

    # -- OpenAI chat completions

    def serve_chat(self, body):
        c = Counts(body, ["messages"], ["max_completion_tokens", "max_tokens"])
        model = body["model"]
        ident = "chatcmpl-" + uuid.uuid4().hex[:24]
        finish = "length" if c.limited else "stop"
        usage = {
            "prompt_tokens": c.words + c.cached,
            "completion_tokens": c.output + c.reasoning,
            "total_tokens": c.words + c.cached + c.output + c.reasoning,
            "prompt_tokens_details": {"cached_tokens": c.cached, "cache_write_tokens": c.cache_write, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": c.reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        tokens = c.tokens()
        if not body.get("stream"):
            self.record["answer"]["usage"] = usage
            return self.send_json(
                200,
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": CREATED,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "".join(tokens), "refusal": None},
                            "logprobs": None,
                            "finish_reason": finish,
                        }
                    ],
                    "usage": usage,
                    "service_tier": "default",
                    "system_fingerprint": "fp_model_api",
                },
            )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta, finish_reason=None):
            out = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "system_fingerprint": "fp_model_api",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            }
            if include_usage:
                out["usage"] = None
            return out

        self.start_stream()
        self.data(chunk({"role": "assistant", "content": "", "refusal": None}))
        for i, token in enumerate(tokens):
            if c.cut and i == len(tokens) // 2:
                self.cut()
            self.data(chunk({"content": token}))
        if c.cut:
            self.cut()
        self.data(chunk({}, finish))
        if include_usage:
            self.record["answer"]["usage"] = usage
            self.data(
                {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": model,
                    "system_fingerprint": "fp_model_api",
                    "choices": [],
                    "usage": usage,
                }
            )
        self.data("[DONE]")
        self.end_stream()

    # -- OpenAI responses

    def serve_responses(self, body):
        c = Counts(body, ["instructions", "input"], ["max_output_tokens"])
        model = body["model"]
        ident = "resp_" + uuid.uuid4().hex
        item = "msg_" + uuid.uuid4().hex
        tokens = c.tokens()
        text = "".join(tokens)
        usage = {
            "input_tokens": c.words + c.cached,
            "input_tokens_details": {"cached_tokens": c.cached, "cache_write_tokens": c.cache_write},
            "output_tokens": c.output + c.reasoning,
            "output_tokens_details": {"reasoning_tokens": c.reasoning},
            "total_tokens": c.words + c.cached + c.output + c.reasoning,
        }

        def part(t):
            return {"type": "output_text", "text": t, "annotations": [], "logprobs": []}

        def message(status, content):
            return {"id": item, "type": "message", "status": status, "role": "assistant", "content": content}

        def response(status, output, usage):
            return {
                "id": ident,
                "object": "response",
                "created_at": CREATED,
                "status": status,
                "background": False,
                "error": None,
                "incomplete_details": None,
                "instructions": body.get("instructions"),
                "max_output_tokens": body.get("max_output_tokens"),
                "model": model,
                "output": output,
                "parallel_tool_calls": True,
                "previous_response_id": None,
                "reasoning": {"effort": None, "summary": None},
                "service_tier": "default",
                "store": True,
                "temperature": 1.0,
                "text": {"format": {"type": "text"}, "verbosity": "medium"},
                "tool_choice": "auto",
                "tools": [],
                "top_p": 1.0,
                "truncation": "disabled",
                "usage": usage,
                "user": None,
                "metadata": {},
            }

        if not body.get("stream"):
            self.record["answer"]["usage"] = usage
            return self.send_json(200, response("completed", [message("completed", [part(text)])], usage))
        seq = iter(range(1 << 30))

        def send(name, obj):
            obj = {"type": name, **obj, "sequence_number": next(seq)}
            self.event(name, obj)

        self.start_stream()
        send("response.created", {"response": response("in_progress", [], None)})
        send("response.in_progress", {"response": response("in_progress", [], None)})
        send("response.output_item.added", {"output_index": 0, "item": message("in_progress", [])})
        send(
            "response.content_part.added",
            {"item_id": item, "output_index": 0, "content_index": 0, "part": part("")},
        )
        for i, token in enumerate(tokens):
            if c.cut and i == len(tokens) // 2:
                self.cut()
            send(
                "response.output_text.delta",
                {"item_id": item, "output_index": 0, "content_index": 0, "delta": token, "logprobs": []},
            )
        if c.cut:
            self.cut()
        send(
            "response.output_text.done",
            {"item_id": item, "output_index": 0, "content_index": 0, "text": text, "logprobs": []},
        )
        send(
            "response.content_part.done",
            {"item_id": item, "output_index": 0, "content_index": 0, "part": part(text)},
        )
        done = message("completed", [part(text)])
        send("response.output_item.done", {"output_index": 0, "item": done})
        self.record["answer"]["usage"] = usage
        send("response.completed", {"response": response("completed", [done], usage)})
        self.end_stream()

    # -- OpenAI embeddings

    def serve_embeddings(self, body):
        c = Counts(body, ["input"], [])
        inputs = body.get("input")
        count = len(inputs) if isinstance(inputs, list) and inputs and not isinstance(inputs[0], int) else 1
        dims = body.get("dimensions") if isinstance(body.get("dimensions"), int) else 8
        base64_wanted = body.get("encoding_format") == "base64"
        data = []
        for i in range(count):
            vector = [round((i + 1) * 0.001 * (d + 1), 6) for d in range(dims)]
            if base64_wanted:
                vector = base64.b64encode(struct.pack(f"<{dims}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": vector})
        usage = {"prompt_tokens": c.words, "total_tokens": c.words}
        self.record["answer"]["usage"] = usage
        self.send_json(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    # -- Anthropic messages

    def serve_messages(self, body):
        c = Counts(body, ["system", "messages"], ["max_tokens"])
        model = body["model"]
        ident = "msg_" + uuid.uuid4().hex[:24]
        tokens = c.tokens()
        stop = "max_tokens" if c.limited else "end_turn"
        usage = {
            "input_tokens": c.words,
            "cache_creation_input_tokens": c.cache_write,
            "cache_read_input_tokens": c.cached,
            "cache_creation": {"ephemeral_5m_input_tokens": c.cache_write, "ephemeral_1h_input_tokens": 0},
            "output_tokens": c.output,
            "service_tier": "standard",
        }

        def message(content, stop_reason, usage):
            return {
                "id": ident,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": usage,
            }

        if not body.get("stream"):
            self.record["answer"]["usage"] = usage
            return self.send_json(200, message([{"type": "text", "text": "".join(tokens)}], stop, usage))
        self.start_stream()
        self.event("message_start", {"type": "message_start", "message": message([], None, {**usage, "output_tokens": 1})})
        self.event("ping", {"type": "ping"})
        self.event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        for i, token in enumerate(tokens):
            if c.cut and i == len(tokens) // 2:
                self.cut()
            self.event(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": token}},
            )
        if c.cut:
            self.cut()
        self.event("content_block_stop", {"type": "content_block_stop", "index": 0})
        final = {"output_tokens": c.output}
        self.record["answer"]["usage"] = {**usage, **final}
        self.event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": final},
        )
        self.event("message_stop", {"type": "message_stop"})
        self.end_stream()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A client that refuses the certificate or hangs up is part of the tests, not the server's fault: one
        # line on stderr instead of a traceback.
        err = sys.exc_info()[1]
        if isinstance(err, (ssl.SSLError, ConnectionError, TimeoutError)):
            print(f"model_api: {client_address[0]}:{client_address[1]}: {err}", file=sys.stderr, flush=True)
            return
        super().handle_error(request, client_address)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--key", default="sk-real-upstream-key")
    p.add_argument("--event-delay-ms", type=float, default=0.0)
    a = p.parse_args()
    if bool(a.tls_cert) != bool(a.tls_key):
        p.error("--tls-cert and --tls-key go together")
    if ":" in a.host:
        Server.address_family = socket.AF_INET6
    server = Server((a.host, a.port), Handler)
    server.key = a.key
    server.event_delay_ms = a.event_delay_ms
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        ctx.set_alpn_protocols(["http/1.1"])
        # The handshake happens in the request's thread, so a client that never finishes one blocks nobody else.
        server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print(f"READY {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
