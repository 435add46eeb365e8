"""Client overhead: the typed client (stichtag/client.py) against raw httpx, per call.

One server (uvicorn in a thread, its own embedded PostgreSQL, no models) and one key;
each operation is called alternately through a plain ``httpx.Client`` (JSON decoded to
dicts) and through ``stichtag.client.Client`` (decoded to the msgspec types, problem mapping,
retry loop), so both see the same server state and the same noise. Prints p50 and p90
per call and the ratio of the p50s.

Usage: ``python bench/bench_client.py [--calls N]`` (default 300 per variant and operation).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import _common as common
import httpx
import uvicorn

from stichtag.api.app import create_app
from stichtag.client import Client
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
                for name, plain, typed in operations:
                    times: dict[str, list[float]] = {"raw": [], "client": []}
                    for _ in range(10):  # warm both paths (connections, caches)
                        plain()
                        typed()
                    for _ in range(opts.calls):
                        for label, call in (("raw", plain), ("client", typed)):
                            t0 = time.perf_counter()
                            call()
                            times[label].append(time.perf_counter() - t0)
                    r50, c50 = _p50(times["raw"]), _p50(times["client"])
                    table.rows.append([name, f"{r50:.2f}", f"{c50:.2f}",
                                       f"{_p90(times['raw']):.2f}",
                                       f"{_p90(times['client']):.2f}", f"{c50 / r50:.3f}"])
                table.notes.append(f"revision {common.revision()}; {common.machine(svc)}")
                print(table.text())
        finally:
            stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
