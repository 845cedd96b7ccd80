"""A request's body off the wire, never more than the limit: by its Content-Length, or chunk by chunk
(Transfer-Encoding: chunked, RFC 9112 section 7.1), which kube-apiserver (Go's net/http) reads too. A
body over the limit is refused as soon as its length, or its chunks, say so, before it is read."""

from __future__ import annotations

from email.message import Message
from typing import BinaryIO

from inferplane.admission.limits import amount
from inferplane.apiserver.status import APIError, bad_request

# The longest chunk-size line (hex size and extensions) or trailer line read; and how many trailer lines.
LINE = 4096
TRAILERS = 64


def too_large(limit: int) -> APIError:
    # kube-apiserver's words for it (k8s.io/apiserver pkg/endpoints/handlers/rest.go, v0.37.0,
    # limitedReadBodyWithRecordMetric: NewRequestEntityTooLargeError("limit is 3145728")).
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit} bytes "
                    f"({amount(limit)}, kube-apiserver's): send a smaller object (split a large one)")


def read_body(headers: Message, stream: BinaryIO, limit: int) -> bytes:
    """The body the headers announce; APIError 400, 413 or 501 for one not read (the connection then
    closes: the unread rest is not a request)."""
    encodings = [e.strip().lower() for e in ",".join(headers.get_all("Transfer-Encoding") or []).split(",") if e.strip()]
    lengths = headers.get_all("Content-Length") or []
    if encodings:
        if lengths:  # both: which one frames the body is ambiguous, the ground of request smuggling
            raise bad_request("the request has both Transfer-Encoding and Content-Length: send one of them")
        if encodings != ["chunked"]:
            raise APIError(501, "NotImplemented", f"Transfer-Encoding {', '.join(encodings)} is not supported: send "
                           "the body with a Content-Length, or chunked alone")
        return _chunked(stream, limit)
    if len(set(lengths)) > 1 or (lengths and not lengths[0].strip().isdigit()):
        raise bad_request("the request's Content-Length is not one whole number of bytes: send the body's length")
    length = int(lengths[0]) if lengths else 0
    if length > limit:
        raise too_large(limit)
    body = stream.read(length) if length else b""
    if len(body) < length:
        raise OSError("the client closed the connection before sending the whole body")
    return body


def _chunked(stream: BinaryIO, limit: int) -> bytes:
    body = bytearray()
    while True:
        line = stream.readline(LINE + 1)
        if not line.endswith(b"\n"):
            if not line:
                raise OSError("the client closed the connection inside a chunked body")
            raise bad_request(f"a chunk's size line is longer than {LINE} bytes: send the chunk's size in hex")
        size_text = line.split(b";", 1)[0].strip()
        if not size_text or len(size_text) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
            raise bad_request("a chunk's size is not a hexadecimal number: send each chunk as its size in hex, CRLF, "
                              "the bytes and CRLF")
        size = int(size_text, 16)
        if size == 0:
            break
        if len(body) + size > limit:
            raise too_large(limit)
        piece = stream.read(size)
        if len(piece) < size:
            raise OSError("the client closed the connection inside a chunk")
        body += piece
        if stream.readline(3).rstrip(b"\r\n") != b"":
            raise bad_request("a chunk is longer than its size says: send each chunk's exact size")
    for _ in range(TRAILERS):  # trailer fields, ignored, up to the empty line
        line = stream.readline(LINE + 1)
        if line in (b"\r\n", b"\n", b""):
            return bytes(body)
        if not line.endswith(b"\n"):
            break
    raise bad_request(f"the chunked body's trailer is over {TRAILERS} lines of at most {LINE} bytes: send no trailer")
