"""The vector writer thread stores every batch it is given, and a failed write reaches
the caller instead of vanishing with the thread."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import uuid4

import numpy as np
import pytest

from stichtag.index.vector_writer import QUEUE_BATCHES, VectorWriter
from stichtag.ports import Vector


class Store:
    """Records writes; fails from the ``fail_at``-th write on."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.rows: dict[int, Vector] = {}
        self.writes = 0
        self.fail_at = fail_at

    def store_vectors(self, tenant_id: object, passage_ids: Sequence[int], vectors: Vector,
                      model_hash: str) -> None:
        self.writes += 1
        if self.fail_at is not None and self.writes >= self.fail_at:
            raise RuntimeError("connection lost")
        assert len(passage_ids) == len(vectors) and model_hash == "m"
        self.rows.update(zip(passage_ids, vectors, strict=True))


def test_every_batch_is_stored() -> None:
    store = Store()
    with VectorWriter(store, uuid4(), "m") as writer:  # type: ignore[arg-type]
        for b in range(3 * QUEUE_BATCHES):
            writer.put([2 * b, 2 * b + 1], np.full((2, 4), b, dtype=np.float32))
    assert writer.written == 6 * QUEUE_BATCHES
    assert sorted(store.rows) == list(range(6 * QUEUE_BATCHES))
    assert all(float(store.rows[pid][0]) == pid // 2 for pid in store.rows)


def test_a_failed_write_is_raised_in_the_callers_thread() -> None:
    store = Store(fail_at=1)
    with pytest.raises(RuntimeError, match="connection lost"), VectorWriter(
            store, uuid4(), "m") as writer:  # type: ignore[arg-type]
        for b in range(10 * QUEUE_BATCHES):  # never blocks forever on a full queue
            writer.put([b], np.zeros((1, 4), dtype=np.float32))
    assert store.rows == {}
