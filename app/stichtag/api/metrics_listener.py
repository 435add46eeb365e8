"""The operator's metrics listener: ``/metrics`` on its own address, off the tenants'
listener (docs/operations.md, "Metrics and dashboards").

A small threaded HTTP server beside uvicorn, started and stopped in the app's lifespan.
It answers ``GET /metrics`` and nothing else; by default it binds a loopback port, so
only the node itself (or a scraper the operator puts there) reaches it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4"


def parse_listen(value: str) -> tuple[str, int] | None:
    """``HOST:PORT`` (``[::1]:9108`` for IPv6) as a pair, or None for ``off``."""
    if value.strip().lower() in ("off", "none", ""):
        return None
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"expected HOST:PORT or off, got {value!r}")
    return host.strip("[]"), int(port)


class MetricsListener:
    """``GET /metrics`` served from ``render`` on a thread of its own."""

    def __init__(self, host: str, port: int, render: Callable[[], bytes]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server's naming
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                body = render()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Scrapes are not logged (every 15 s forever)."""

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="stichtag-metrics", daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        """Where it listens (the port chosen when 0 was asked for)."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
