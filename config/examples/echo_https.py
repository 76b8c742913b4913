"""An HTTPS server for the walkthrough (docs/src/getting-started.md) that answers every request with the
headers it received, as JSON: what the upstream sees once cordon has done its work.

    python3 echo_https.py CERT KEY [PORT]      (listens on 127.0.0.1, port 8443 by default)
"""

import http.server
import json
import ssl
import sys


class Echo(http.server.BaseHTTPRequestHandler):
    """Answers GET and POST with the request line and headers."""

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = json.dumps(
            {"method": self.command, "path": self.path, "headers": dict(self.headers.items())},
            indent=2,
        ).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = answer
    do_POST = answer

    def log_message(self, format, *args):
        pass


def main():
    cert, key = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 8443
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Echo)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
