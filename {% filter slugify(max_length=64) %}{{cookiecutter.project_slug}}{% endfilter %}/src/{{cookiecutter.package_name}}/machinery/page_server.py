"""A small local web server for one page and one JSON endpoint. Standard library only.

Careful enough for a laptop in a shared room:
- it listens on 127.0.0.1 only, on a port the system picks as free (or one you choose);
- a request whose Host header is not this server's address is refused: a web page from
  elsewhere cannot reach it through DNS rebinding (its name resolving to 127.0.0.1);
- a POST from another origin is refused, and bodies are limited in size;
- a request that is wrong in any way gets a 4xx answer with a one-sentence message as JSON,
  never a traceback; each request runs in its own thread, with a socket timeout.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import sys
import threading
from typing import Callable, Mapping, Tuple

HOST = "127.0.0.1"
MAX_BODY_BYTES = 2 * 1024 * 1024
SOCKET_TIMEOUT_S = 15.0  # an idle connection (a browser between strokes) is closed after this
BODY_TIMEOUT_S = 5.0  # a body that stops arriving for this long is the client's fault: 408


class RequestError(Exception):
    """The request cannot be answered as asked: ``status`` and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# A POST endpoint: (body, content type) -> a JSON-able answer, or RequestError.
Endpoint = Callable[[bytes, str], object]
Pages = Mapping[str, Tuple[bytes, str]]  # path -> (content, content type)


class PageServer(http.server.ThreadingHTTPServer):
    daemon_threads = True  # Ctrl+C does not wait for a browser's idle keep-alive connection
    request_queue_size = 64  # connections waiting to be accepted; past it they are reset

    def __init__(self, pages: Pages, endpoints: Mapping[str, Endpoint], port: int = 0) -> None:
        self.pages = dict(pages)
        self.endpoints = dict(endpoints)
        self._open: dict[threading.Thread, socket.socket] = {}
        self._open_lock = threading.Lock()
        super().__init__((HOST, port), _Handler)

    def process_request_thread(self, request, client_address) -> None:
        with self._open_lock:
            self._open[threading.current_thread()] = request
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open.pop(threading.current_thread(), None)

    def server_close(self) -> None:
        """Close the listening socket, then end the open connections and wait for their
        threads: a thread still alive while Python exits can abort the process."""
        super().server_close()
        with self._open_lock:
            open_now = list(self._open.items())
        for _thread, connection in open_now:
            with contextlib.suppress(OSError):  # already closed by the browser
                connection.shutdown(socket.SHUT_RDWR)  # wakes a thread waiting for a request
        for thread, _connection in open_now:
            thread.join(timeout=2.0)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def allowed_hosts(self) -> set[str]:
        return {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    def handle_error(self, request, client_address) -> None:
        # A browser that drops a connection (a closed tab, a reload) is no error to report.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: PageServer
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_S
    server_version = "draw"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(self._get)

    def do_POST(self) -> None:
        self._answer(self._post)

    def _answer(self, handle: Callable[[], tuple[int, bytes, str]]) -> None:
        try:
            self._check_host()
            status, body, content_type = handle()
        except RequestError as error:
            status, content_type = error.status, "application/json"
            body = json.dumps({"error": str(error)}).encode("utf-8")
            self.close_connection = True  # an unread body must not be taken for a request
        except Exception as error:  # a fault of ours: say so, and keep serving
            status, content_type = 500, "application/json"
            message = f"The server failed: {type(error).__name__}: {error}"
            body = json.dumps({"error": message}).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        # Everything comes from this server: no CDN, nothing from elsewhere, works offline.
        self.send_header(
            "Content-Security-Policy",
            "default-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
            "frame-ancestors 'none'",
        )
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _check_host(self) -> None:
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in self.server.allowed_hosts():
            raise RequestError(
                403, f"This page answers only at {self.server.url}; open that address instead."
            )

    def _get(self) -> tuple[int, bytes, str]:
        path = self.path.split("?", 1)[0]
        if path not in self.server.pages:
            raise RequestError(404, f"There is nothing at {path}; the page is at /.")
        content, content_type = self.server.pages[path]
        return 200, content, content_type

    def _post(self) -> tuple[int, bytes, str]:
        path = self.path.split("?", 1)[0]
        endpoint = self.server.endpoints.get(path)
        if endpoint is None:
            raise RequestError(404, f"There is no endpoint at {path}.")
        origin = self.headers.get("Origin")
        if origin is not None and origin.rstrip("/") != self.server.url.rstrip("/"):
            raise RequestError(403, f"Requests from {origin} are not accepted.")
        body = self._read_body()
        content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        answer = endpoint(body, content_type)
        return 200, json.dumps(answer).encode("utf-8"), "application/json"

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise RequestError(411, "Send the body with a Content-Length, not chunked.")
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            raise RequestError(411, "A Content-Length header is required.")
        try:
            length = int(length_text)
        except ValueError:
            raise RequestError(400, f"Content-Length {length_text!r} is not a number.") from None
        if length < 0:
            raise RequestError(400, "Content-Length cannot be negative.")
        if length > MAX_BODY_BYTES:
            raise RequestError(
                413, f"The body is {length} bytes; at most {MAX_BODY_BYTES} are accepted."
            )
        self.connection.settimeout(BODY_TIMEOUT_S)
        try:
            body = self.rfile.read(length)
        except (TimeoutError, OSError):  # socket.timeout is an OSError (and TimeoutError)
            raise RequestError(
                408, f"The body stopped arriving before its Content-Length ({length} bytes)."
            ) from None
        finally:
            self.connection.settimeout(SOCKET_TIMEOUT_S)
        if len(body) != length:
            raise RequestError(400, "The body ended before its Content-Length.")
        return body

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per stroke would bury what the command prints
