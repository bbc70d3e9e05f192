"""A Bazel HTTP remote cache in memory, on loopback, for tests.

Bazel's HTTP cache protocol (https://bazel.build/remote/caching#http-caching):
GET, HEAD and PUT on /ac/<sha256> (action results) and /cas/<sha256> (file
contents); a missing entry is 404. The server also counts requests per
(method, kind, outcome), so a test can say what the cache saw: outcome
"hit" (an entry PUT here), "seed hit" (see below), "miss" or "stored".

    with HttpCache() as cache:
        bazel build --remote_cache=cache.url ...

`seed` names a Bazel --disk_cache directory the server also answers from,
read-only, below what was PUT: a disk cache holds the same action results
and blobs as an HTTP cache, under ac/<2 hex digits>/<sha256> and
cas/<2 hex digits>/<sha256>.
"""

from __future__ import annotations

import collections
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_PATH = re.compile(r"^(?:/[^/]+)*/(ac|cas)/([0-9a-f]{64})$")


class HttpCache:
    """Serves an in-memory cache on 127.0.0.1 (an ephemeral port) from a thread."""

    def __init__(self, seed: Path | None = None) -> None:
        self.entries: dict[tuple[str, str], bytes] = {}
        self.seed = seed
        self.requests: collections.Counter = collections.Counter()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        # Bazel keeps its connections open until its server exits: closing the
        # cache must not wait for their threads.
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, name="http-cache", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "HttpCache":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _count(self, *key: str) -> None:
        with self._lock:
            self.requests[key] += 1

    def lookup(self, kind: str, digest: str) -> tuple[bytes | None, str]:
        """What a GET of /<kind>/<digest> answers, and the outcome to count:
        a PUT entry ("hit"), else the seed's ("seed hit"), else ("miss")."""
        with self._lock:
            data = self.entries.get((kind, digest))
        if data is not None:
            return data, "hit"
        if self.seed is not None:
            try:
                return (self.seed / kind / digest[:2] / digest).read_bytes(), "seed hit"
            except OSError:
                pass
        return None, "miss"


def _handler_for(cache: HttpCache) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1: Bazel keeps connections alive between requests.
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass  # Bazel makes thousands of requests; pytest shows failures anyway.

        def _key(self):
            m = _PATH.match(self.path)
            if m is None:
                self._reply(400, b"not /ac/<sha256> or /cas/<sha256>\n")
                return None
            return m.group(1), m.group(2)

        def _reply(self, status: int, body: bytes = b"", *, send_body: bool = True) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            if send_body and body:
                self.wfile.write(body)

        def _get(self, send_body: bool) -> None:
            key = self._key()
            if key is None:
                return
            data, outcome = cache.lookup(*key)
            cache._count(self.command, key[0], outcome)
            if data is None:
                self._reply(404, send_body=send_body)
            else:
                self._reply(200, data, send_body=send_body)

        def do_GET(self):  # noqa: N802 - http.server's naming
            self._get(send_body=True)

        def do_HEAD(self):  # noqa: N802
            self._get(send_body=False)

        def do_PUT(self):  # noqa: N802
            key = self._key()
            if key is None:
                return
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = self._read_chunked()
            else:
                data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with cache._lock:
                cache.entries[key] = data
            cache._count("PUT", key[0], "stored")
            self._reply(200)

        def _read_chunked(self) -> bytes:
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk

    return Handler
