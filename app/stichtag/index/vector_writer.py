"""A writer thread for passage vectors: the model computes the next batch while the
database stores the last one.

On two cores the database's part of an embedding round (the UPDATE, the HNSW insert, the
WAL) ran between model calls, and onnxruntime's threads sat idle meanwhile. The queue is
bounded, so memory stays bounded when the database is the slower side: ``put`` then
waits for the writer.
"""

from __future__ import annotations

import queue
import threading
from types import TracebackType
from typing import Self
from uuid import UUID

import numpy as np

from stichtag.ports import PassageStore, Vector

QUEUE_BATCHES = 4
"""Batches waiting for the writer at most (a few MB of vectors)."""

_Batch = tuple[list[int], Vector]


class VectorWriter:
    """Stores ``(passage ids, vectors)`` batches on its own thread, in the order given.

    Use it as a context manager: leaving the block stores what was put and joins the
    thread; a write error is raised from the next ``put`` or from leaving the block.
    """

    def __init__(self, store: PassageStore, tenant_id: UUID, model_hash: str) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.model_hash = model_hash
        self.written = 0
        """Passages stored so far."""
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=QUEUE_BATCHES)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="stichtag-vectors", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._queue.put(None)
        self._thread.join()
        if self._error is not None and exc is None:
            raise self._error

    def put(self, passage_ids: list[int], vectors: Vector) -> None:
        """Queue one batch (waits while ``QUEUE_BATCHES`` are queued)."""
        if self._error is not None:
            raise self._error
        self._queue.put((passage_ids, vectors))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            # What queued up meanwhile goes into the same transaction.
            batch = [item]
            done = False
            while not done:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    done = True
                else:
                    batch.append(more)
            if self._error is None:
                try:
                    self._write(batch)
                except BaseException as exc:  # handed to the caller's thread
                    self._error = exc
            if done:
                return

    def _write(self, batch: list[_Batch]) -> None:
        ids = [pid for pids, _ in batch for pid in pids]
        vectors = [row for _, rows in batch for row in rows]
        self.store.store_vectors(self.tenant_id, ids, np.stack(vectors), self.model_hash)
        self.written += len(ids)
