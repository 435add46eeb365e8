"""Database transactions and round trips per /v1/answer on the demo corpus (#14, #19).

    .venv/bin/python bench/bench_transactions.py [--repeat 3]

A fresh embedded PostgreSQL in a temporary data directory, the demo tenant loaded and
indexed, then each question answered ``--repeat`` times through ``AnswerService.answer``
(what POST /v1/answer calls). The count is ``Database.transactions`` before and after one
answer: every pool transaction of the process, including the run-log append and the tenant
clock's observation (the worker is idle once the index caught up). Round trips are the
calls of ``psycopg.Connection.wait``, through which every exchange with the server passes
(a statement, BEGIN, COMMIT, the pool's liveness check): one call is one request sent and
its results read. Prints a table.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stichtag.bootstrap import bootstrap  # noqa: E402
from stichtag.cli.demo import DEMO_DIR, OUT_OF_SCOPE_QUESTION  # noqa: E402
from stichtag.cli.manifest import ingest_manifest  # noqa: E402
from stichtag.cli.tenants import operator  # noqa: E402
from stichtag.config import load_settings  # noqa: E402
from stichtag.domain.timeutil import parse_time  # noqa: E402
from stichtag.models.build import build_models  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from _common import RoundTrips  # noqa: E402

QUESTIONS = (("Welcher Höchstrechnungszins gilt für Neugeschäft?", "2022-06-01"),
             ("Welche Dokumente zum Thema Überschussbeteiligung gibt es?", "2024-06-01"),
             (OUT_OF_SCOPE_QUESTION, "2024-06-01"))


def main() -> None:
    """Load the demo, answer, count."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    models = REPO / ".data" / "models"
    build_models(models)
    os.environ["STICHTAG_DATA_DIR"] = tempfile.mkdtemp(prefix="stichtag-tx-")
    os.environ["STICHTAG_MODELS_DIR"] = str(models)
    os.environ.pop("STICHTAG_DATABASE_URL", None)  # never count someone else's server
    svc = bootstrap(load_settings())
    try:
        assert svc.answers is not None
        svc.access.create_tenant("demo", "Europe/Berlin")
        who = operator(svc, "demo")
        ingest_manifest(svc, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
        svc.indexer.catch_up(who.tenant_id)
        db = svc.store.db
        trips = RoundTrips()
        print(f"{'question':<60} {'status':<10} transactions / round trips per answer")
        for question, valid_at in QUESTIONS:
            counts, status = [], ""
            for _ in range(args.repeat):
                before, trips_before = db.transactions, trips.count
                result = svc.answers.answer(who, question,
                                            valid_at=parse_time(valid_at, field="valid_at"),
                                            known_at=svc.clock.now())
                counts.append(f"{db.transactions - before}/{trips.count - trips_before}")
                status = result.status
            print(f"{question[:60]:<60} {status:<10} {' '.join(map(str, counts))}")
    finally:
        svc.close()


if __name__ == "__main__":
    main()
