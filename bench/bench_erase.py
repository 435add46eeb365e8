"""What a GDPR erasure costs (docs/operations.md, "GDPR erasure"): ``ErasureService.erase`` on a
long version.

Starts its own embedded PostgreSQL in a temporary directory, ingests a synthetic law of
``--pages`` pages (four paragraphs of about 700 characters per page, every paragraph
distinct, so nothing is shared with other versions), gives every passage a stored vector
(random, 384 dimensions: the erasure pays for the HNSW-indexed column either way), brings
the lexical index up to date, and then times, in the same run:

1. the ingest of the version (the reference the ratio is taken against),
2. the erasure: run-log append, erasure row, ``erase_version`` blanking blocks, heading
   paths, passages and vectors, and the outbox rows, in one transaction,
3. the lexical index applying the erasure (deleting the version's documents),
4. a second erasure call (idempotent: nothing changes).

Each size runs in a tenant that also holds ``--others`` versions of the same size that are
not erased (the blanking checks them for shared blocks and passages). No ONNX model is
needed.

    PYTHONPATH=. .venv/bin/python bench/bench_erase.py [--pages 1000] [--small 100] [--others 2]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _embedded import stop_embedded

from stichtag.bootstrap import Services, bootstrap
from stichtag.cli.tenants import operator
from stichtag.config import Settings
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest

SENTENCE = ("Die Versicherungsnehmerin {name} (Vertrag {page}-{para}-{n}) erhält nach "
            "Absatz {para} der Fassung {edition} einen Rechnungszins von {rate} Prozent. ")


def synthetic(pages: int, edition: int) -> str:
    """A markdown law of ``pages`` pages: a heading per page, four paragraphs of about 700
    characters each (five sentences), every one distinct."""
    parts = [f"# Akte {edition}\n"]
    for page in range(pages):
        parts.append(f"\n## Seite {page + 1}\n")
        for para in range(4):
            body = "".join(SENTENCE.format(name=f"Person {edition}-{page}", page=page,
                                           para=para + 1, n=n, edition=edition,
                                           rate=f"{(page + n) % 4},{para}5")
                           for n in range(5))
            parts.append(f"\n({para + 1}) {body.strip()}\n")
    return "".join(parts)


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _vectors(svc: Services, who: Principal, seed: int) -> int:
    """Random stored vectors for every passage of the tenant (as the indexer would)."""
    with svc.store.tx(who.tenant_id) as conn:
        ids = [int(r[0]) for r in conn.execute("SELECT passage_id FROM passages ORDER BY 1")]
    rng = random.Random(seed)
    vectors = [[rng.uniform(-1, 1) for _ in range(384)] for _ in ids]
    for i in range(0, len(ids), 2000):
        svc.store.retrieval.store_vectors(who.tenant_id, ids[i:i + 2000],
                                          vectors[i:i + 2000], "bench-random")
    return len(ids)


def measure(svc: Services, who: Principal, pages: int, others: int) -> str:
    """One table row: ingest, erase, index apply and repeat times for one size."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    for n in range(others):
        svc.documents.ingest(who, f"other-{n}", IngestRequest(
            text=synthetic(pages, 100 + n), valid_from=start + timedelta(days=n)))
    text = synthetic(pages, 7)
    ingest = {}
    ingest["ms"] = _timed(lambda: ingest.update(r=svc.documents.ingest(
        who, "akte", IngestRequest(text=text, valid_from=start))))
    version_id = ingest["r"].version_id
    passages = _vectors(svc, who, pages)
    svc.indexer.sync_lexical(who.tenant_id)
    before = svc.indexer.index(who.tenant_id).doc_count()
    result = {}
    erase_ms = _timed(lambda: result.update(r=svc.erasures.erase(
        who, version_id, reason="bench: GDPR request")))
    index_ms = _timed(lambda: svc.indexer.sync_lexical(who.tenant_id))
    after = svc.indexer.index(who.tenant_id).doc_count()
    again_ms = _timed(lambda: svc.erasures.erase(who, version_id, reason="again"))
    blanked = result["r"].blanked
    return (f"| {pages} | {len(text) / 1e6:.2f} | {blanked['blocks']} | {blanked['passages']} "
            f"| {passages} | {before - after} | {ingest['ms']:.0f} | {erase_ms:.0f} "
            f"| {index_ms:.0f} | {again_ms:.1f} | {erase_ms / ingest['ms']:.2f} |")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure a small and a large erasure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--others", type=int, default=2)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="sterase-", dir="/tmp"))
    svc: Services | None = None
    try:
        svc = bootstrap(Settings(data_dir=tmp, database_url=None, migration_database_url=None),
                        embedder=None)
        print("| pages | MB text | blocks blanked | passages blanked | vectors in tenant "
              "| index docs removed | ingest ms | erase ms | index apply ms | repeat ms "
              "| erase / ingest |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- "
              "| --- | --- |")
        for n, pages in enumerate((args.small, args.pages)):
            svc.access.create_tenant(f"erase-{n}")
            print(measure(svc, operator(svc, f"erase-{n}"), pages, args.others), flush=True)
    finally:
        if svc is not None:
            svc.close()
        stop_embedded(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
