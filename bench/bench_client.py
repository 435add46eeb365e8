"""Client overhead: the typed clients (app/stichtag/client/) against raw httpx, per call.

One server (uvicorn in a thread, its own embedded PostgreSQL, no models) and one key;
each operation is called alternately through a plain ``httpx.Client`` (JSON decoded to
dicts) and through ``stichtag.client.Client`` (decoded to the msgspec types, problem mapping,
retry loop), so both see the same server state and the same noise; then the same with
``httpx.AsyncClient`` against ``stichtag.client.AsyncClient`` on one event loop. Prints p50
and p90 per call and the ratio of the p50s. On a busy machine the loopback rows are
dominated by the server's and the scheduler's noise, so a second table isolates the
client's own cost: the same calls against the server's recorded responses, replayed
in-process by ``httpx.MockTransport`` (no socket, no server), in microseconds.

Usage: ``python bench/bench_client.py [--calls N]`` (default 300 per variant and operation).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import _common as common
import httpx
import uvicorn

from stichtag.api.app import create_app
from stichtag.client import AsyncClient, Client
from stichtag.services.documents import IngestRequest

TEXT = ("# Regel\n\n(1) Der Höchstzinssatz beträgt 0,25 Prozent.\n\n"
        + "".join(f"({n}) Satz {n} der Regel gilt ab dem 1. Januar 2022.\n" for n in range(2, 60)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(svc: Any) -> tuple[str, Callable[[], None]]:
    """The app on loopback in a thread (as tests/conftest.py serves it); a stop function."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(svc.settings, built=svc), host="127.0.0.1",
                                           port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)

    return f"http://127.0.0.1:{port}", stop


def _ok(response: httpx.Response) -> Any:
    """What a careful raw caller does at least: check the status, decode the JSON."""
    response.raise_for_status()
    return response.json()


def _p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[8] * 1000


Pair = tuple[str, Callable[[], Any], Callable[[], Any]]
AsyncPair = tuple[str, Callable[[], Awaitable[Any]], Callable[[], Awaitable[Any]]]


def _row(table: Any, name: str, times: dict[str, list[float]]) -> None:
    r50, c50 = _p50(times["raw"]), _p50(times["client"])
    table.rows.append([name, f"{r50:.2f}", f"{c50:.2f}", f"{_p90(times['raw']):.2f}",
                       f"{_p90(times['client']):.2f}", f"{c50 / r50:.3f}"])


def _sync(table: Any, operations: list[Pair], calls: int) -> None:
    for name, plain, typed in operations:  # warmed first (connections, caches)
        _row(table, f"sync {name}", _alternate(plain, typed, calls))


async def _async(table: Any, base: str, key: str, version_id: str, calls: int) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers) as raw, \
            AsyncClient(base, key) as api:

        async def get(path: str) -> Any:
            return _ok(await raw.get(path))

        operations: list[AsyncPair] = [
            ("getVersion", lambda: get(f"/v1/versions/{version_id}"),
             lambda: api.version(version_id)),
            ("getDocumentHistory", lambda: get("/v1/documents/regel/history"),
             lambda: api.history("regel")),
            ("getDocumentAsOf", lambda: get("/v1/documents/regel"),
             lambda: api.document("regel"))]
        for name, plain, typed in operations:
            times: dict[str, list[float]] = {"raw": [], "client": []}
            for _ in range(10):
                await plain()
                await typed()
            for _ in range(calls):
                for label, call in (("raw", plain), ("client", typed)):
                    t0 = time.perf_counter()
                    await call()
                    times[label].append(time.perf_counter() - t0)
            _row(table, f"async {name}", times)


def _replayer(recorded: dict[str, httpx.Response]) -> httpx.MockTransport:
    """Answers each path with the response the real server gave it."""
    def handle(request: httpx.Request) -> httpx.Response:
        got = recorded[request.url.path]
        return httpx.Response(got.status_code, content=got.content,
                              headers={"content-type": got.headers["content-type"]})

    return httpx.MockTransport(handle)


def _in_process(base: str, key: str, version_id: str, calls: int) -> Any:
    """Client cost alone: raw httpx vs the typed clients on recorded responses."""
    paths = {"getVersion": f"/v1/versions/{version_id}",
             "getDocumentHistory": "/v1/documents/regel/history",
             "getDocumentAsOf": "/v1/documents/regel"}
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as live:
        recorded = {path: live.get(path) for path in paths.values()}
    table = common.Table(f"Client cost in-process (recorded responses), {calls * 10} calls "
                         "each, alternating, µs",
                         ["operation", "raw p50 µs", "client p50 µs", "client - raw µs"])
    transport = _replayer(recorded)
    with httpx.Client(base_url="http://bench", transport=transport) as raw, \
            Client("http://bench", key, transport=transport) as api:
        typed = {"getVersion": lambda: api.version(version_id),
                 "getDocumentHistory": lambda: api.history("regel"),
                 "getDocumentAsOf": lambda: api.document("regel")}
        for name, path in paths.items():
            times = _alternate(lambda p=path: _ok(raw.get(p)), typed[name], calls * 10)
            _micro_row(table, f"sync {name}", times)

    async def run() -> None:
        async with httpx.AsyncClient(base_url="http://bench", transport=transport) as raw, \
                AsyncClient("http://bench", key, transport=transport) as api:
            typed = {"getVersion": lambda: api.version(version_id),
                     "getDocumentHistory": lambda: api.history("regel"),
                     "getDocumentAsOf": lambda: api.document("regel")}
            for name, path in paths.items():
                async def plain(p: str = path) -> Any:
                    return _ok(await raw.get(p))
                times: dict[str, list[float]] = {"raw": [], "client": []}
                for _ in range(calls * 10):
                    for label, call in (("raw", plain), ("client", typed[name])):
                        t0 = time.perf_counter()
                        await call()
                        times[label].append(time.perf_counter() - t0)
                _micro_row(table, f"async {name}", times)

    asyncio.run(run())
    return table


def _alternate(plain: Callable[[], Any], typed: Callable[[], Any],
               calls: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"raw": [], "client": []}
    for _ in range(10):
        plain()
        typed()
    for _ in range(calls):
        for label, call in (("raw", plain), ("client", typed)):
            t0 = time.perf_counter()
            call()
            times[label].append(time.perf_counter() - t0)
    return times


def _micro_row(table: Any, name: str, times: dict[str, list[float]]) -> None:
    r50, c50 = _p50(times["raw"]) * 1000, _p50(times["client"]) * 1000
    table.rows.append([name, f"{r50:.1f}", f"{c50:.1f}", f"{c50 - r50:+.1f}"])


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print the table."""
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--calls", type=int, default=300)
    opts = args.parse_args(argv)
    # Generous limits: a 429 would time the back-off, not the client.
    with common.services(None, rate_per_second=100_000.0, rate_burst=100_000) as svc:
        who = common.tenant(svc)
        created = svc.documents.ingest(who, "regel", IngestRequest(text=TEXT))
        version_id = created.version_id
        _, key = svc.access.create_key(who.tenant_id, scopes=["read"], clearance=3)
        base, stop = _serve(svc)
        headers = {"Authorization": f"Bearer {key}"}
        try:
            with httpx.Client(base_url=base, headers=headers) as raw, Client(base, key) as api:
                operations: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
                    ("getVersion", lambda: _ok(raw.get(f"/v1/versions/{version_id}")),
                     lambda: api.version(version_id)),
                    ("getDocumentHistory", lambda: _ok(raw.get("/v1/documents/regel/history")),
                     lambda: api.history("regel")),
                    ("getDocumentAsOf", lambda: _ok(raw.get("/v1/documents/regel")),
                     lambda: api.document("regel"))]
                table = common.Table(
                    f"Client overhead per call, {opts.calls} calls each, alternating",
                    ["operation", "raw p50 ms", "client p50 ms", "raw p90 ms",
                     "client p90 ms", "client / raw (p50)"])
                _sync(table, operations, opts.calls)
                asyncio.run(_async(table, base, key, version_id, opts.calls))
                table.notes.append(f"revision {common.revision()}; {common.machine(svc)}")
                print(table.text())
            micro = _in_process(base, key, version_id, opts.calls)
            micro.notes.append(f"revision {common.revision()}")
            print()
            print(micro.text())
        finally:
            stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
