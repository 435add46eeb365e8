"""The client retries a real 429 after its Retry-After, within its bound, and then raises
the typed error with the limit and the wait (app/stichtag/client/core.py, RetryPolicy)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from stichtag import client as c
from stichtag.config import Settings
from tests.conftest import LiveServer, make_tenant
from tests.integration.test_rate_limits import GENEROUS


@pytest.fixture
def settings(database: str, tmp_path: Path, models_dir: Path) -> Settings:
    """One request per second and no burst beyond it: a second call at once gets a 429.
    Repeated refusals are sent at once: the server's holding them back (which would serve
    the capped client's fast retries after a second) is tested in tests/unit/test_limits.py;
    here the client's own bound is what is tested."""
    limits: dict[str, Any] = {**GENEROUS, "rate_per_second": 1.0, "rate_burst": 1,
                              "rate_refusal_delay": 0.0}
    return Settings(data_dir=tmp_path / "data", database_url=database, max_body_bytes=2 * 2**20,
                    pool_min=1, pool_max=4, models_path=models_dir, **limits)


def test_a_429_is_retried_after_retry_after_and_raised_past_the_bound(
        live: LiveServer) -> None:
    who = make_tenant(live.services, "retry")
    key = live.key(who)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    with c.Client(live.base_url, key, retries=2, sleep=sleep) as api:
        api.ingest("doc", "# A\n\n(1) Ein Satz.\n", valid_from="2024-01-01")
        for _ in range(3):  # back to back: the bucket holds one request per second
            assert api.history("doc").assertions  # each served, some after a wait
        assert waits and set(waits) == {1.0}  # the server's Retry-After, whole seconds
    with c.Client(live.base_url, key, retries=0, sleep=sleep) as impatient:
        waits.clear()
        with pytest.raises(c.Throttled) as refused:
            for _ in range(3):
                impatient.history("doc")
        assert waits == []  # no retry allowed: raised at once
        assert refused.value.retry_after == 1.0 and refused.value.problem.limit == "key_rate"
        assert refused.value.status == 429
    with c.Client(live.base_url, key, retries=5, max_wait=0.01, sleep=sleep) as capped:
        before = 0
        with pytest.raises(c.Throttled):
            for _ in range(10):
                before = len(waits)
                capped.history("doc")
        # the failing call waited five times (the bound), never longer than max_wait
        assert len(waits) - before == 5 and set(waits[before:]) == {0.01}
