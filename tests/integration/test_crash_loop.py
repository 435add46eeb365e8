"""The quick crash loop (docs/operations.md, "Crashes and unknown outcomes"): 4 server SIGKILLs and
1 postmaster SIGKILL
under 4 ingest clients (a third of the writes PDF uploads) and 4 answer clients; nothing
acknowledged is lost, nothing is torn (originals included), the tantivy replica equals
the outbox after each kill, the run log verifies and never shrinks.
`make crashloop` runs the long version (bench/crash_loop.py, >= 50 + >= 3 kills).

Budget (docs/testing.md, "Long tests and their budgets"): in ``make test`` 4 + 1 kills,
enough for a kill during an ingest, during an upload, during an answer and of the
postmaster itself, each checked by the same invariants; ``make test-long`` runs the
bench's 50 + 3, which meets the rarer windows (a kill between the commit and the
response, during an index apply)."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _driver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash_loop", REPO / "bench" / "crash_loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["crash_loop"] = module  # dataclasses resolve annotations through it
    spec.loader.exec_module(module)
    return module


def test_schedule_is_reproducible() -> None:
    loop = _driver()
    first = loop.schedule(7, 50, 3)
    assert first == loop.schedule(7, 50, 3)
    assert first != loop.schedule(8, 50, 3)
    assert [k.target for k in first].count("postmaster") == 3
    assert first[0].target == "server"


def test_quick_crash_loop(models_dir: Path) -> None:
    loop = _driver()
    started = time.monotonic()
    totals, ledger = loop.run(seed=3, server_kills=4, postmaster_kills=1, models_dir=models_dir,
                              low=1.0, high=2.5, min_writes=6, echo=False)
    print(loop.table(totals, ledger, time.monotonic() - started))
    assert totals.problems == []
    assert (totals.server_kills, totals.postmaster_kills) == (4, 1)
    assert totals.lost == totals.torn == totals.index_diffs == totals.runs_missing == 0
    assert totals.log_failures == 0 and totals.log_size > 0
    # Every round carried writes before its kill (min_writes), however slow the machine.
    assert ledger.outcomes["ingest_acked"] >= 5 * 6 and sum(ledger.answers.values()) > 0
    assert ledger.outcomes["pdf_acked"] > 0 and ledger.originals  # PDFs were in the mix
    # A dead or restarting database is a 503 (retry), never a 500.
    assert ledger.outcomes["ingest_500"] == ledger.outcomes["answer_500"] == 0
