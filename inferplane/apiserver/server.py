"""HTTP for the API: HTTPS on the standard library's threading server (one thread a connection, which
suits SQLite's blocking reads and a watch's long response; no event loop to bridge), HTTP/1.1 with
chunked responses for watches, and the bearer token on every request.

Logged, one line a request on standard error: method, path, code and time. Never a body, a query's
values or a header: a Secret's data is only ever in the response to an authenticated read of it."""

from __future__ import annotations

import hmac
import socket
import ssl
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO
from urllib.parse import parse_qsl, urlsplit

import orjson

from inferplane.apiserver.app import Answer, App, Request
from inferplane.apiserver.credentials import Credentials
from inferplane.apiserver.status import unauthorized

# The largest request body taken: kube-apiserver's (k8s.io/apiserver pkg/server/config.go, v0.37.0,
# MaxRequestBodyBytes: 3 MiB).
MAX_BODY = 3 * 1024 * 1024
# Seconds a connection may stay idle (or take to say hello) before its thread lets it go.
IDLE_TIMEOUT = 120


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "APIHTTPServer"

    def setup(self) -> None:
        self.request.settimeout(IDLE_TIMEOUT)
        super().setup()

    def _serve(self) -> None:
        started = time.monotonic()
        parts = urlsplit(self.path)
        token = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        length = int(self.headers.get("Content-Length") or 0)
        if not hmac.compare_digest(token.encode(), self.server.token.encode()):
            answer = Answer(401, unauthorized().status())
        elif length > MAX_BODY:
            answer = Answer(413, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 413,
                                  "reason": "RequestEntityTooLarge", "message": f"the body is over {MAX_BODY} bytes"})
        else:
            body = self.rfile.read(length) if length else b""
            request = Request(self.command, parts.path, dict(parse_qsl(parts.query)),
                              {k.lower(): v for k, v in self.headers.items()}, body)
            answer = self.server.app.answer(request)
        if length and answer.code in (401, 413):
            self.close_connection = True  # the body was not read
        self._send(answer)
        self.server.log(f"{self.command} {parts.path} {answer.code} {1000 * (time.monotonic() - started):.0f}ms")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.code)
        self.send_header("Content-Type", answer.content_type if answer.body != "ok" else "text/plain")
        self.send_header("Cache-Control", "no-cache, private")
        for warning in answer.warnings:
            # RFC 7234 Warning, as kube-apiserver sends admission warnings (kubectl prints `Warning: ...`).
            text = warning.replace("\\", "\\\\").replace('"', '\\"').encode("latin-1", "replace").decode("latin-1")
            self.send_header("Warning", f'299 - "{text}"')
        if answer.stream is not None:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._stream(answer)
            return
        body = answer.body.encode() if answer.body == "ok" else orjson.dumps(answer.body)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, answer: Answer) -> None:
        try:
            for line in answer.stream:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            self.close_connection = True
        finally:
            answer.stream.close()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        pass  # each request is logged once by _serve, without its query


class APIHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Bind exactly the address given (a second server on the same port is refused, not shared).
    allow_reuse_address = False

    def __init__(self, address: tuple[str, int], app: App, credentials: Credentials, log: IO[str] | None = None):
        super().__init__(address, Handler)
        self.app, self.token = app, credentials.token
        self.log_to = log if log is not None else sys.stderr
        self.log_lock = threading.Lock()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory() as folder:  # ssl reads a key from a file only; gone at once
            cert, key = Path(folder) / "tls.crt", Path(folder) / "tls.key"
            cert.write_bytes(credentials.cert_pem + credentials.ca_pem)
            key.write_bytes(credentials.key_pem)
            key.chmod(0o600)
            self.context.load_cert_chain(cert, key)

    def get_request(self):
        connection, address = self.socket.accept()
        # The handshake happens in the connection's own thread (at its first read), so that a slow or
        # silent client never holds up the accepting loop.
        return self.context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request, client_address) -> None:
        self.log(f"connection from {client_address[0]} failed: {sys.exc_info()[1]!r}")

    def log(self, line: str) -> None:
        with self.log_lock:
            print(line, file=self.log_to, flush=True)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"https://{f'[{host}]' if ':' in host else host}:{port}"
