"""Locust users for the stichtag load test; ``bench/bench_load.py`` drives them as a library.

Two kinds of users, each bound to one tenant and one API key:

- ``Client``: what an integrating system does — mostly searches, some answers, an
  occasional ingest of a new version (one changed paragraph, so only that passage needs
  an embedding), with think time between requests.
- ``Flooder``: a runaway client of one tenant — search and answer back to back, no think
  time, spread over several keys so that the tenant's queue (not just one key's bucket)
  is what refuses it.

The runner fills ``PLAN`` before it starts any user (keys, questions, document texts),
and subclasses these with ``tenant``, ``fixed_count`` and ``host`` per phase. Each request
carries ``context() = {"tenant", "role"}`` into locust's ``request`` event, where the
runner counts statuses and latencies by phase, tenant and endpoint.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from locust import FastHttpUser, between, constant, task

PLAN: dict[str, Any] = {
    "keys": {},        # tenant -> {"client": [token, ...], "flood": [token, ...]}
    "questions": [],   # (question, valid_at) pairs from the demo corpus
    "texts": [],       # document texts to derive new versions from
}
_ids = itertools.count()


class _Tenanted(FastHttpUser):
    abstract = True
    tenant = "A"
    role = "client"

    def on_start(self) -> None:
        self.uid = next(_ids)
        keys = PLAN["keys"][self.tenant][self.role]
        self.auth = {"Authorization": f"Bearer {keys[self.uid % len(keys)]}"}
        self.rng = random.Random(self.uid)  # picks questions, not secrets
        self.version = 0

    def context(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "role": self.role}

    def _post(self, path: str, body: dict[str, Any], name: str) -> None:
        # Back-pressure answers are an expected outcome here, not a failed request; the
        # runner classifies every status itself.
        with self.client.post(path, json=body, headers=self.auth, name=name,
                              catch_response=True) as r:
            r.success()

    def search(self) -> None:
        question, valid_at = self.rng.choice(PLAN["questions"])
        self._post("/v1/search", {"query": question, "valid_at": valid_at, "k": 10}, "search")

    def answer(self) -> None:
        question, valid_at = self.rng.choice(PLAN["questions"])
        self._post("/v1/answer", {"question": question, "valid_at": valid_at}, "answer")

    def ingest(self) -> None:
        self.version += 1
        text = self.rng.choice(PLAN["texts"])
        text = f"{text.rstrip()}\n\n(99) Lastprobe {self.uid}, Fassung {self.version}.\n"
        self._post(f"/v1/documents/load-{self.uid % 4}-{self.uid}/versions",
                   {"text": text, "confidentiality": "internal"}, "ingest")


class Client(_Tenanted):
    """Normal traffic: 6 searches : 3 answers : 1 ingest, 0.5-1.5 s think time."""

    abstract = True
    wait_time = between(0.5, 1.5)

    @task(6)
    def do_search(self) -> None:
        self.search()

    @task(3)
    def do_answer(self) -> None:
        self.answer()

    @task(1)
    def do_ingest(self) -> None:
        self.ingest()


class Flooder(_Tenanted):
    """A runaway client: expensive requests back to back."""

    abstract = True
    role = "flood"
    wait_time = constant(0)

    @task(2)
    def do_search(self) -> None:
        self.search()

    @task(1)
    def do_answer(self) -> None:
        self.answer()
