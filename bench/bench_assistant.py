"""Assistants (docs/assistants.md): the added latency of the MCP stdio path over a direct
client call for ``ask``, and the grounding check's latency for a ten-sentence answer with
ten quotes.

One server (uvicorn in a thread, its own embedded PostgreSQL, the e5 int8 model) holds
the DeckRV of the shared law corpus (its versions from 2019 on, historical transaction
times). ``ask`` is called alternately through ``stichtag.client.AsyncClient`` and through
an MCP client of the official SDK talking to ``stichtag mcp`` (a subprocess on stdio,
itself an AsyncClient of the same server), on one event loop, so both see the same server
state and the same noise. The check is timed three ways, alternately: the use case in
process (no HTTP), ``POST /v1/answer/check`` through the client, and ``check_answer``
through MCP stdio. Each check records a run (one log append).

Usage: ``python bench/bench_assistant.py [--calls N] [--checks N] [--write]``.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as common
from bench_client import _serve
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters

from stichtag.api import schemas as s
from stichtag.cli.manifest import ingest_manifest
from stichtag.client import AsyncClient
from stichtag.domain.timeutil import parse_time
from stichtag.services.grounding import QuoteRef

QUESTION = "Wie hoch ist der Höchstzinssatz für die Berechnung der Deckungsrückstellungen?"
VALID_AT = "2022-06-01"
HEADING = "## Assistants: MCP and the grounding check"


def _manifest(root: Path, target: Path) -> Path:
    with (root / "manifest.csv").open(encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if r["document"] == "deckrv" and r["tx_time"] >= "2019"]
    with target.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({**r, "file": str(root / r["file"])})
    return target


def _ms(samples: list[float], q: float) -> str:
    return f"{common.percentile(samples, q) * 1000:.1f}"


async def _measure(url: str, key: str, quotes: list[s.QuoteCitationBody], answer: str,
                   svc: Any, who: Any, calls: int, checks: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in (
        "ask direct", "ask mcp", "check in process", "check http", "check mcp")}
    env = {**os.environ, "STICHTAG_URL": url, "STICHTAG_KEY": key}
    params = StdioServerParameters(command=sys.executable, args=["-m", "stichtag.cli", "mcp"],
                                   env=env, cwd=str(common.REPO))
    refs = [QuoteRef(sentence=q.sentence, document=q.document, quote=q.quote,
                     version_id=q.version_id, start=q.start, end=q.end) for q in quotes]
    valid_at = parse_time(VALID_AT, field="valid_at")
    mcp_citations = [{"sentence": q.sentence, "document": q.document, "quote": q.quote,
                      "start": q.start, "end": q.end} for q in quotes]
    async with AsyncClient(url, key) as client, McpClient(params) as mcp:
        for _ in range(3):  # warm both paths (caches, the subprocess's imports)
            await client.answer(QUESTION, valid_at=VALID_AT)
            await mcp.call_tool("ask", {"question": QUESTION, "valid_at": VALID_AT})
        for _ in range(calls):
            t = time.perf_counter()
            await client.answer(QUESTION, valid_at=VALID_AT)
            times["ask direct"].append(time.perf_counter() - t)
            t = time.perf_counter()
            result = await mcp.call_tool("ask", {"question": QUESTION, "valid_at": VALID_AT})
            times["ask mcp"].append(time.perf_counter() - t)
            assert not result.is_error
        for _ in range(checks):
            t = time.perf_counter()
            got = await asyncio.to_thread(svc.grounding.check_quotes, who, answer=answer,
                                          citations=refs, valid_at=valid_at,
                                          known_at=svc.clock.now())
            times["check in process"].append(time.perf_counter() - t)
            assert got.outcome.status == "answered", got.outcome
            t = time.perf_counter()
            await client.check_answer(answer, citations=quotes, valid_at=VALID_AT)
            times["check http"].append(time.perf_counter() - t)
            t = time.perf_counter()
            await mcp.call_tool("check_answer", {"answer": answer, "valid_at": VALID_AT,
                                                 "citations": mcp_citations})
            times["check mcp"].append(time.perf_counter() - t)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30, help="ask calls per variant")
    parser.add_argument("--checks", type=int, default=100, help="checks per variant")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    started = time.perf_counter()
    root = common.shared("corpus", "de-insurance-law")
    with common.services(common.embedder(), pool_max=6) as svc:
        who = common.tenant(svc, "law")
        ingest_manifest(svc, who, _manifest(root, Path(tempfile.mkdtemp()) / "deckrv.csv"),
                        use_tx_time=True)
        svc.indexer.catch_up(who.tenant_id)
        _, key = svc.access.create_key(who.tenant_id, scopes=["read"], clearance=3)
        _, content = svc.documents.get(who, "deckrv", valid_at=parse_time(
            VALID_AT, field="valid_at"), known_at=svc.clock.now())
        sentences = [x for x in content.sentences if x.end - x.start > 40][:10]
        quotes = [s.QuoteCitationBody(sentence=i, document="deckrv", start=x.start, end=x.end,
                                      quote=content.text[x.start:x.end])
                  for i, x in enumerate(sentences)]
        answer = " ".join(f"Satz {i + 1} gibt die Verordnung wieder." for i in range(10))
        url, stop = _serve(svc)
        try:
            times = asyncio.run(_measure(url, key, quotes, answer, svc, who, args.calls,
                                         args.checks))
        finally:
            stop()
        where = common.machine(svc)
    ask = common.Table(
        f"ask on the DeckRV as of {VALID_AT} ({args.calls} calls per variant, alternating)",
        ["path", "p50 ms", "p95 ms", "p50 vs direct"])
    base = common.median(times["ask direct"])
    for name in ("ask direct", "ask mcp"):
        ask.rows.append([name, _ms(times[name], 0.5), _ms(times[name], 0.95),
                         common.ratio(common.median(times[name]), base)])
    added = [m - d for m, d in zip(times["ask mcp"], times["ask direct"], strict=True)]
    ask.notes.append(f"added by the MCP stdio path, per pair: p50 {_ms(added, 0.5)} ms, p95 "
                     f"{_ms(added, 0.95)} ms")
    check = common.Table(
        f"check of a ten-sentence answer with ten quotes ({args.checks} per variant)",
        ["path", "p50 ms", "p95 ms"])
    for name in ("check in process", "check http", "check mcp"):
        check.rows.append([name, _ms(times[name], 0.5), _ms(times[name], 0.95)])
    check.notes.append("every check records a run (one log append in its own transaction)")
    common.emit([ask, check])
    if args.write:
        body = common.markdown("MCP stdio overhead and the check's latency", [ask, check],
                               command="python bench/bench_assistant.py --write",
                               where=where, seconds=time.perf_counter() - started)
        common.replace_section(common.DOC, HEADING, f"{HEADING}\n\n{body}")


if __name__ == "__main__":
    main()
