"""What an erasure costs in the run log, and what sealing costs each recorded answer
(docs/audit.md, "Sealed texts"; docs/operations.md, "GDPR erasure").

Starts its own embedded PostgreSQL in a temporary directory (no ONNX model needed) and
measures, in the same run:

1. **Erasing a version cited by N recorded runs** (N = ``--runs``, default 1,000 and
   10,000): a fresh tenant holds two small versions; N answer records cite the one to
   erase and ``--others`` cite the other (so the deletion has to pick its rows out of a
   larger table). Each record is appended through ``RunLog.append`` as an answer run
   records it: two cited sentences and two draft sentences, so four sealed texts per
   run. Then ``ErasureService.erase`` is timed (run-log leaf, erasure row, blanking and
   the deletion of the run texts, one transaction), with the rows it deleted, against the
   erasure of a version no run cites in the same tenant (the ratio).
2. **The write cost per answer of sealing**: the same answer-shaped record appended
   ``--appends`` times as the log did before sealing (the whole record in the leaf, no
   run_texts rows) and as it does now, interleaved, p50 and p90 per append. The rest of
   an answer (retrieval, rerank, gates) is unchanged by sealing; the full answer's p50
   moves by this difference.

    PYTHONPATH=app .venv/bin/python bench/bench_erasure_log.py [--runs 1000 10000]
        [--others 1000] [--appends 400] [--answers 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _embedded import stop_embedded

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli.tenants import operator
from stichtag.config import Settings
from stichtag.domain import merkle
from stichtag.domain.canonical_json import canonicalize
from stichtag.domain.records import LogHead
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from stichtag.services.runlog import normalized

TEXT = ("# Akte {n}\n\n(1) Die Versicherungsnehmerin Person {n} wohnt in der Musterstraße "
        "{n}. (2) Sie hat den Höchstrechnungszins von 0,25 Prozent für ihren Vertrag Nr. {n} "
        "gewählt.\n")


def record(principal: Principal, version_id: str, n: int) -> dict[str, Any]:
    """An answer record of the shape services/answer_record.py writes, citing one version."""
    s1 = f"Die Versicherungsnehmerin Person {n} wohnt in der Musterstraße {n}."
    s2 = f"Sie hat den Höchstrechnungszins von 0,25 Prozent für ihren Vertrag Nr. {n} gewählt."
    cite = [{"version_id": version_id, "start": 20, "end": 80}]
    return {
        "kind": "answer", "run_id": str(uuid.uuid4()),
        "request": {"question": "Welchen Zins hat sie gewählt?", "generator": "extractive"},
        "as_of": {"valid_at": "2024-06-01T00:00:00Z", "known_at": "2024-06-01T00:00:00Z"},
        "tenant": str(principal.tenant_id), "key_id": principal.key_id, "clearance": 3,
        "candidates": [{"document": "akte", "version_id": version_id, "passage": 0,
                        "start": 0, "end": 200, "bm25": 3.2, "vector": 0.8, "fused": 0.03,
                        "rerank": 4.1, "calibrated": 0.9}],
        "evidence": [{"eid": "e1", "version_id": version_id, "start": 20, "end": 80,
                      "score": 0.9},
                     {"eid": "e2", "version_id": version_id, "start": 81, "end": 160,
                      "score": 0.8}],
        "gates": [{"gate": "relevance", "passed": True, "threshold": 0.5, "observed": 0.9,
                   "detail": None}],
        "generator": {"name": "extractive", "exchanges": [], "tools": [], "error": None,
                      "draft": {"sentences": [{"text": s1, "evidence": ["e1"]},
                                              {"text": s2, "evidence": ["e2"]}], "gaps": []}},
        "result": {"status": "answered", "reason": None, "coverage": 1.0, "gaps": [],
                   "sentences": [{"text": s1, "citations": cite},
                                 {"text": s2, "citations": cite}], "conflicts": []},
        "timings_ms": {"total": 12.5},
    }


def append_unsealed(svc: Services, who: Principal, rec: dict[str, Any]) -> None:
    """The append as it was before sealing: the whole record in the leaf."""
    stored = normalized(rec)
    leaf = merkle.leaf_hash(canonicalize(stored))
    with svc.store.units.unit(who.tenant_id) as uow:
        head = uow.log.lock_head(merkle.EMPTY_ROOT)
        tree = merkle.CompactRange.from_list(head.size, head.frontier)
        tree.append(leaf)
        root = tree.root()
        checkpoint = svc.runlog._sign(who.tenant_id, tree.size, root)
        uow.log.insert_leaf(run_id=uuid.UUID(rec["run_id"]), kind="answer", key_id="bench",
                            record=stored, seq=head.size, leaf=leaf)
        uow.log.set_head(LogHead(size=tree.size, root=root, frontier=tree.to_list(),
                                 checkpoint=checkpoint))


def append_sealed(svc: Services, who: Principal, rec: dict[str, Any]) -> None:
    """The append as it is now (RunLog.append seals)."""
    with svc.store.units.unit(who.tenant_id) as uow:
        svc.runlog.append(uow, who.tenant_id, run_id=uuid.UUID(rec["run_id"]), kind="answer",
                          key_id="bench", record=rec)


def _ms(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def erase_row(svc: Services, tenant: str, runs: int, others: int) -> str:
    """One row: erase a version cited by ``runs`` runs, and one cited by none."""
    svc.access.create_tenant(tenant)
    who = operator(svc, tenant)
    ids = [svc.documents.ingest(who, f"akte-{n}", IngestRequest(
        text=TEXT.format(n=n), valid_from=datetime(2024, 1, 1, tzinfo=UTC))).version_id
        for n in range(3)]
    cited, other, uncited = ids
    started = time.perf_counter()
    for n in range(runs):
        append_sealed(svc, who, record(who, cited, n))
    for n in range(others):
        append_sealed(svc, who, record(who, other, n))
    fill_s = time.perf_counter() - started
    with svc.store.tx(who.tenant_id) as conn:
        held = conn.execute("SELECT count(*) FROM run_texts").fetchone()[0]
    base: dict[str, Any] = {}
    base_ms = _ms(lambda: base.update(r=svc.erasures.erase(who, uncited, reason="bench")))
    done: dict[str, Any] = {}
    erase_ms = _ms(lambda: done.update(r=svc.erasures.erase(who, cited, reason="bench")))
    deleted = done["r"].blanked["run_texts"]
    assert base["r"].blanked["run_texts"] == 0 and deleted == 4 * runs
    return (f"| {runs:,} | {others:,} | {held:,} | {deleted:,} | {erase_ms:.0f} "
            f"| {base_ms:.0f} | {erase_ms / base_ms:.1f} | {erase_ms * 1000 / deleted:.1f} "
            f"| {fill_s * 1000 / (runs + others):.2f} |")


def append_rows(svc: Services, appends: int) -> list[str]:
    """p50/p90 of one answer-record append, before and after sealing, interleaved."""
    svc.access.create_tenant("appends")
    who = operator(svc, "appends")
    version_id = svc.documents.ingest(who, "akte", IngestRequest(
        text=TEXT.format(n=0), valid_from=datetime(2024, 1, 1, tzinfo=UTC))).version_id
    times: dict[str, list[float]] = {"unsealed": [], "sealed": []}
    for n in range(appends):
        order = [("unsealed", append_unsealed), ("sealed", append_sealed)]
        for name, fn in order if n % 2 else order[::-1]:
            rec = record(who, version_id, n)
            times[name].append(_ms(lambda fn=fn, rec=rec: fn(svc, who, rec)))
    p50 = {k: statistics.median(v) for k, v in times.items()}
    p90 = {k: statistics.quantiles(v, n=10)[-1] for k, v in times.items()}
    return [f"| {k} | {appends} | {p50[k]:.2f} | {p90[k]:.2f} | {p50[k] / p50['unsealed']:.2f} |"
            for k in ("unsealed", "sealed")]


def answer_rows(answers: int) -> list[str]:
    """p50/p90 of a whole recorded answer (e5 + the stored-vector reranker, extractive),
    with sealing and with the log's append as before sealing, interleaved on one tenant."""
    import _common

    from stichtag.services import runlog

    sealing = runlog.seal
    times: dict[str, list[float]] = {"unsealed": [], "sealed": []}
    answered = {"unsealed": 0, "sealed": 0}
    with _common.services(_common.embedder()) as svc:
        who = _common.tenant(svc)
        for n in range(20):
            svc.documents.ingest(who, f"akte-{n}", IngestRequest(
                text=TEXT.format(n=n), valid_from=datetime(2024, 1, 1, tzinfo=UTC)))
        svc.indexer.catch_up(who.tenant_id)
        assert svc.answers is not None
        valid_at = datetime(2024, 6, 1, tzinfo=UTC)
        for n in range(answers):
            order = ["unsealed", "sealed"] if n % 2 else ["sealed", "unsealed"]
            for name in order:
                # the "before" variant: the record goes into the leaf whole, as before 0017
                runlog.seal = sealing if name == "sealed" else (  # type: ignore[assignment]
                    lambda record: (record, []))
                question = f"Welchen Höchstrechnungszins hat Person {n % 20} gewählt?"
                got: dict[str, Any] = {}
                times[name].append(_ms(lambda q=question, got=got: got.update(
                    r=svc.answers.answer(  # type: ignore[union-attr]
                        who, q, valid_at=valid_at, known_at=datetime.now(UTC)))))
                answered[name] += got["r"].status != "abstained"  # only those seal texts
        runlog.seal = sealing
    p50 = {k: statistics.median(v) for k, v in times.items()}
    p90 = {k: statistics.quantiles(v, n=10)[-1] for k, v in times.items()}
    return [f"| {k} | {answers} ({answered[k]} answered) | {p50[k]:.1f} | {p90[k]:.1f} "
            f"| {p50[k] / p50['unsealed']:.2f} |" for k in ("unsealed", "sealed")]


def main(argv: Sequence[str] | None = None) -> int:
    """Print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--others", type=int, default=1000)
    parser.add_argument("--appends", type=int, default=400)
    parser.add_argument("--answers", type=int, default=0,
                        help="also time N whole answers each way (loads the ONNX models)")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="sterlog-", dir="/tmp"))
    svc: Services | None = None
    try:
        svc = bootstrap(Settings(data_dir=tmp, database_url=None, migration_database_url=None),
                        embedder=None)
        print("| runs citing it | runs citing another | run_texts rows | rows deleted "
              "| erase ms | erase ms, uncited version | ratio | µs per row deleted "
              "| append ms per run (fill) |\n| --- | --- | --- | --- | --- | --- | --- "
              "| --- | --- |")
        for i, runs in enumerate(args.runs):
            print(erase_row(svc, f"erase-{i}", runs, args.others), flush=True)
        print("\n| answer record append | appends | p50 ms | p90 ms | p50 / unsealed |\n"
              "| --- | --- | --- | --- | --- |")
        for line in append_rows(svc, args.appends):
            print(line, flush=True)
    finally:
        if svc is not None:
            svc.close()
        stop_embedded(tmp)
    if args.answers:
        print("\n| recorded answer (POST /v1/answer's service call) | answers | p50 ms | p90 ms "
              "| p50 / unsealed |\n| --- | --- | --- | --- | --- |")
        for line in answer_rows(args.answers):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
