"""Passage vectors are written by the background worker, ``catch_up`` and answers at once:
the writes must neither deadlock nor replace a vector a run may already have used."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import numpy as np

from stichtag.services.documents import IngestRequest

MODEL = "test-model"


def _pending(services: Any, tenant: Any) -> list[int]:
    with services.store.tx(tenant.tenant_id) as conn:
        return [row[0] for row in conn.execute(
            "SELECT passage_id FROM passages WHERE embedding IS NULL ORDER BY passage_id")]


def test_overlapping_writers_in_opposite_orders_neither_deadlock_nor_overwrite(
        services: Any, tenant: Any) -> None:
    services.worker.stop()  # this test is the only writer of vectors
    text = "# Rundschreiben\n\n" + "".join(
        f"## § {i}\n\n({i}) Abschnitt {i} regelt den Fall Nummer {i} ausführlich.\n\n"
        for i in range(1, 301))
    services.documents.ingest(tenant, "rundschreiben", IngestRequest(
        text=text, valid_from=datetime(2024, 1, 1, tzinfo=UTC), doc_class="note"))
    ids = _pending(services, tenant)
    assert len(ids) >= 200
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(order: list[int], value: float) -> None:
        try:
            barrier.wait(timeout=30)
            services.store.retrieval.store_vectors(
                tenant.tenant_id, order, np.full((len(order), 384), value, np.float32), MODEL)
        except BaseException as exc:  # a deadlock surfaces here as DeadlockDetected
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(ids, 1.0)),
               threading.Thread(target=writer, args=(ids[::-1], -1.0))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with services.store.tx(tenant.tenant_id) as conn:
        firsts = {row[0] for row in conn.execute(
            "SELECT DISTINCT (embedding::real[])[1] FROM passages WHERE passage_id = ANY(%s)",
            (ids,))}
    assert len(firsts) == 1  # one writer won every row; the other changed none
    assert _pending(services, tenant) == []
