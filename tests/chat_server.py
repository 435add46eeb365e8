"""A scripted chat-completions server on 127.0.0.1 for generator tests.

Real HTTP (stdlib ``http.server`` in a thread), so the generator's client, timeouts and
retries run exactly as against a model server. Each POST is logged on arrival — before
any scripted delay — so a test can count attempts even when the client gave up waiting.
Responses come from a queue; an unexpected request gets a 500 and is flagged.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Scripted:
    """One response to give: raw body bytes, HTTP status, seconds to wait before it."""

    body: bytes
    status: int = 200
    delay: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request as it arrived."""

    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body)


def completion(content: str | None) -> dict[str, Any]:
    """An OpenAI chat-completion envelope around ``content``."""
    return {"id": "chatcmpl-test", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def answer(sentences: Sequence[tuple[str, Sequence[str]]], gaps: Sequence[str] = (),
           consulted: Sequence[str] = ()) -> str:
    """The model's JSON answer in the shape the generator demands."""
    return json.dumps({"sentences": [{"text": t, "evidence": list(ids)} for t, ids in sentences],
                       "gaps": list(gaps), "consulted": list(consulted)}, ensure_ascii=False)


class ChatServer:
    """The server, its response queue and its request log."""

    def __init__(self) -> None:
        self._script: deque[Scripted] = deque()
        self._log: list[Received] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.unexpected = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        """The URL prefix a generator is configured with."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def received(self) -> list[Received]:
        """A copy of the request log, in arrival order."""
        with self._lock:
            return list(self._log)

    def push(self, body: bytes | str | dict[str, Any], *, status: int = 200,
             delay: float = 0.0) -> None:
        """Queue a raw response (dicts are sent as JSON)."""
        raw = (json.dumps(body).encode() if isinstance(body, dict)
               else body.encode() if isinstance(body, str) else body)
        with self._lock:
            self._script.append(Scripted(body=raw, status=status, delay=delay))

    def push_content(self, content: str | None, *, delay: float = 0.0) -> None:
        """Queue a 200 completion whose message content is ``content``."""
        self.push(completion(content), delay=delay)

    def _next(self, received: Received) -> Scripted:
        with self._lock:
            self._log.append(received)
            if self._script:
                return self._script.popleft()
            self.unexpected += 1
        return Scripted(body=b'{"error": "no scripted response"}', status=500)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                step = server._next(Received(path=self.path, headers=dict(self.headers),
                                             body=body))
                if step.delay and server._stop.wait(step.delay):
                    return  # shutting down: no one is waiting for this answer
                try:
                    self.send_response(step.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(step.body)))
                    self.end_headers()
                    self.wfile.write(step.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left: that is the scripted case

            def log_message(self, format: str, *args: Any) -> None:
                """Silence: the request log is the record."""

        return Handler

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def close(self) -> None:
        """Release delayed handlers, stop serving and close the socket."""
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    """A running server, closed afterwards."""
    server = ChatServer()
    server.start()
    try:
        yield server
    finally:
        server.close()
