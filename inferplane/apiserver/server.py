"""HTTP for the API: HTTPS on the standard library's threading server (one thread a connection, which
suits SQLite's blocking reads and a watch's long response; no event loop to bridge), HTTP/1.1 with
chunked responses for watches, and the bearer token on every request.

Logged, one line a request on standard error: method, path, code and time. Never a body, a query's
values or a header: a Secret's data is only ever in the response to an authenticated read of it."""

from __future__ import annotations

import hmac
import io
import select
import socket
import ssl
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO
from urllib.parse import parse_qsl, unquote, urlsplit

import orjson

from inferplane.apiserver.app import Answer, App, Request, is_console
from inferplane.apiserver.credentials import Credentials
from inferplane.apiserver.http_body import read_body
from inferplane.apiserver.status import APIError, impersonation_refused, unauthorized

# The largest request body taken: kube-apiserver's (k8s.io/apiserver pkg/server/config.go, v0.37.0,
# MaxRequestBodyBytes: 3 MiB), whether sent with a Content-Length or in chunks.
MAX_BODY = 3 * 1024 * 1024
# Seconds a connection may stay idle (or take to say hello) before its thread lets it go.
IDLE_TIMEOUT = 120
# Seconds a request's line and headers may take once its first byte came: kube-apiserver's
# (k8s.io/apiserver pkg/server/secure_serving.go, v0.37.0: ReadHeaderTimeout: 32 * time.Second), so a
# client sending a byte at a time holds a thread no longer than this.
HEADER_SECONDS = 32
# Seconds a request's body may take: kube-apiserver's default request timeout (k8s.io/apiserver
# pkg/server/config.go, v0.37.0: RequestTimeout 60 s).
BODY_SECONDS = 60


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A response's headers and body go out as separate writes: with Nagle's algorithm the body waits for
    # the client's delayed ACK of the headers (~40 ms on Linux), which made each request of a sequential
    # client (kubectl apply, one object at a time) cost 40 ms of nothing.
    disable_nagle_algorithm = True
    server: "APIHTTPServer"

    def setup(self) -> None:
        self.request.settimeout(IDLE_TIMEOUT)
        super().setup()
        self.rfile.close()
        self.reader = DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self.reader)

    def handle_one_request(self) -> None:
        self.reader.deadline = None
        try:
            if not self.rfile.peek(1):  # idle until the next request begins (or the client goes)
                self.close_connection = True
                return
        except (OSError, ValueError):
            self.close_connection = True
            return
        self.reader.deadline = time.monotonic() + HEADER_SECONDS
        super().handle_one_request()

    def _serve(self) -> None:
        started = time.monotonic()
        parts = urlsplit(self.path)
        path = unquote(parts.path)  # as Go's URL.Path: a name may be sent percent-escaped
        token = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        body: bytes | None = None
        bearer = hmac.compare_digest(token.encode(), self.server.token.encode())
        if not bearer and self.server.app.console is not None and is_console(path):
            # The console's pages, by their session cookie (console.py): no body is read.
            body = b""
            if self.headers.get("Content-Length", "0") != "0" or "Transfer-Encoding" in self.headers:
                self.close_connection = True
        elif not bearer:
            answer = Answer(401, unauthorized().status())
        else:
            self.reader.deadline = time.monotonic() + BODY_SECONDS
            try:
                body = read_body(self.headers, self.rfile, MAX_BODY)
            except APIError as error:
                answer = Answer(error.code, error.status())
            except (OSError, ValueError):  # the client went, or sent too slowly: nobody to answer
                self.close_connection = True
                return
            finally:
                self.reader.deadline = None
        if body is not None:
            impersonating = sorted(k for k in self.headers if k.lower().startswith("impersonate-"))
            if impersonating:
                answer = Answer(403, impersonation_refused(impersonating).status())
            else:
                request = Request(self.command, path, dict(parse_qsl(parts.query)),
                                  {k.lower(): v for k, v in self.headers.items()}, body, self._connected, bearer)
                answer = self.server.app.answer(request)
        else:
            self.close_connection = True  # the body was not read (whole): what follows is not a request
        self._send(answer)
        self.server.log(f"{self.command} {path} {answer.code} {1000 * (time.monotonic() - started):.0f}ms")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _connected(self) -> bool:
        """Whether the client is still there, for a watch with nothing to send: it sends nothing after its
        request (HTTP/1.1 answers one request at a time), so anything to read, its close included, means
        it has gone (a TLS close_notify, a FIN, a reset)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.code)
        self.send_header("Content-Type", answer.content_type if answer.body != "ok" else "text/plain")
        self.send_header("Cache-Control", "no-cache, private")
        for warning in answer.warnings:
            # RFC 7234 Warning, as kube-apiserver sends admission warnings (kubectl prints `Warning: ...`).
            text = warning.replace("\\", "\\\\").replace('"', '\\"').encode("latin-1", "replace").decode("latin-1")
            self.send_header("Warning", f'299 - "{text}"')
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if answer.stream is not None:
            try:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._stream(answer)
            finally:
                answer.stream.close()
            return
        if isinstance(answer.body, bytes):  # a page of the console's, its script
            body = answer.body
        else:
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
        except (OSError, ssl.SSLError):  # the client went (a broken pipe, a reset, a write that timed out)
            self.close_connection = True

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


class DeadlineReader(socket.SocketIO):
    """A connection's reads, each waiting at most until the deadline set (the header or body deadline),
    else IDLE_TIMEOUT: a socket's timeout bounds one read only, so a client trickling bytes would
    otherwise hold its thread for as long as it liked."""

    deadline: float | None = None

    def __init__(self, connection: socket.socket):
        super().__init__(connection, "rb")

    def readinto(self, buffer) -> int | None:
        timeout = IDLE_TIMEOUT
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout <= 0:
                raise TimeoutError("the request was not read in time")
        self._sock.settimeout(timeout)
        return super().readinto(buffer)
