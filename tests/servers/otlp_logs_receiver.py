#!/usr/bin/env python3
"""An OTLP/HTTP logs receiver for the tests: decodes each POST to /v1/logs with the official OpenTelemetry
protobuf definitions (PyPI opentelemetry-proto), appends one JSON line per log record to OUT (flushed before
it answers), and answers with an ExportLogsServiceResponse.

    otlp_logs_receiver.py OUT [PORT]    # prints "listening on PORT" once it accepts connections

With --answer STATUS it answers every request with that status instead (a collector refusing or overloaded);
with --stall it reads each request and never answers (a collector that hangs).
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

LOCK = threading.Lock()


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.server.stall:
            threading.Event().wait()
        if self.server.answer:
            self.send_response(self.server.answer)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if self.path != "/v1/logs" or self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        req = ExportLogsServiceRequest()
        req.ParseFromString(body)
        out = []
        for rl in req.resource_logs:
            resource = attrs(rl.resource.attributes)
            for sl in rl.scope_logs:
                for r in sl.log_records:
                    out.append(
                        {
                            "resource": resource,
                            "scope": sl.scope.name,
                            "time_unix_nano": r.time_unix_nano,
                            "severity": r.severity_text,
                            "event_name": r.event_name,
                            "body": value(r.body),
                            "attributes": attrs(r.attributes),
                            "authorization": self.headers.get("authorization"),
                        }
                    )
        with LOCK:
            with open(self.server.out, "a") as f:
                for line in out:
                    f.write(json.dumps(line) + "\n")
        answer = ExportLogsServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("port", nargs="?", type=int, default=0)
    p.add_argument("--answer", type=int, default=0)
    p.add_argument("--stall", action="store_true")
    a = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.out = a.out
    server.answer = a.answer
    server.stall = a.stall
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
