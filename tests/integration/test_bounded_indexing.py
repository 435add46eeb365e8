"""Indexing in bounded memory (docs/operations.md, "Derived indexes"): a lexical round is committed
to tantivy
in parts, and the applied sequence moves only with a round's last part; and one writer
per replica directory (item 5): a second process follows the first.

``LEXICAL_PART`` is shrunk so that two small laws take many parts; the index must end up
exactly as PostgreSQL says (``check``), and a failure between parts must leave the
applied sequence where it was, so that the next sync applies the round again."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from stichtag.index import applier
from stichtag.index.tantivy_index import TenantIndex
from stichtag.services.documents import IngestRequest

PART = 7


def _law(sections: int, word: str) -> str:
    return "# Gesetz\n\n" + "".join(
        f"## § {i}\n\n({i}) Die {word} nach Absatz {i} gilt für den Fall {i}.\n\n"
        for i in range(1, sections + 1))


def _ingest_two_versions(services: Any, tenant: Any) -> None:
    services.worker.stop()  # this test applies the outbox itself
    for year, word in ((2020, "Regel"), (2022, "Vorschrift")):
        services.documents.ingest(tenant, "gesetz", IngestRequest(
            text=_law(40, word), valid_from=datetime(year, 1, 1, tzinfo=UTC)))


def test_parts_of_a_round_add_up_to_the_whole_index(services: Any, tenant: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _ingest_two_versions(services, tenant)
    commits: list[int] = []
    apply = TenantIndex.apply

    def counted(self: TenantIndex, **kwargs: Any) -> None:
        commits.append(len(kwargs["upserts"]))
        apply(self, **kwargs)

    monkeypatch.setattr(applier, "LEXICAL_PART", PART)
    monkeypatch.setattr(TenantIndex, "apply", counted)
    seen: list[tuple[str, int, int]] = []
    indexer = services.indexer
    seq = indexer.sync_lexical(tenant.tenant_id, progress=lambda *a: seen.append(a))
    assert seq == services.store.feed.outbox_head(tenant.tenant_id)
    assert max(commits) <= PART and len(commits) > 3
    report = indexer.check(tenant.tenant_id)
    assert report["differences"] == 0 and report["expected"] > 40
    assert seen[-1] == ("lexical", seen[-1][2], seen[-1][2])


def test_a_failure_between_parts_keeps_the_applied_sequence(
        services: Any, tenant: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _ingest_two_versions(services, tenant)
    monkeypatch.setattr(applier, "LEXICAL_PART", PART)
    apply = TenantIndex.apply
    calls = 0

    def failing(self: TenantIndex, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("disk full")
        apply(self, **kwargs)

    monkeypatch.setattr(TenantIndex, "apply", failing)
    indexer = services.indexer
    with pytest.raises(RuntimeError, match="disk full"):
        indexer.sync_lexical(tenant.tenant_id)
    index = indexer.index(tenant.tenant_id)
    assert index.applied_seq() == 0  # two parts are in, the round's sequence is not
    assert index.doc_count() > 0
    monkeypatch.setattr(TenantIndex, "apply", apply)
    assert indexer.sync_lexical(tenant.tenant_id) == services.store.feed.outbox_head(
        tenant.tenant_id)
    assert indexer.check(tenant.tenant_id)["differences"] == 0


def test_a_second_writer_of_one_replica_follows_the_first(services: Any, tenant: Any) -> None:
    """A server and the CLI on one data directory share ``index/``; tantivy lets one of
    them write. The other waits for the writer's commits instead of failing with
    ``LockBusy`` (the CLI's ``index sync`` did), and writes itself once it is free."""
    _ingest_two_versions(services, tenant)
    feed = services.store.feed
    head = feed.outbox_head(tenant.tenant_id)
    other = applier.Indexer(feed, services.store.retrieval, services.indexer.root, None)
    other.index(tenant.tenant_id).take_writer()  # "the server" holds the writer
    seen: list[tuple[str, int, int]] = []
    result: list[int] = []
    waiter = threading.Thread(target=lambda: result.append(services.indexer.sync_lexical(
        tenant.tenant_id, progress=lambda *a: seen.append(a))))
    waiter.start()
    time.sleep(4 * applier.FOLLOW_POLL)
    assert waiter.is_alive() and not result  # following, not applying and not failing
    assert other.sync_lexical(tenant.tenant_id) == head  # the writer applies the outbox
    waiter.join(timeout=30)
    assert result == [head]
    assert seen[-1] == ("lexical", head, head)
    # the first writer goes away (a stopped server): the follower writes from then on
    other.close()
    services.documents.ingest(tenant, "gesetz", IngestRequest(
        text=_law(5, "Satzung"), valid_from=datetime(2024, 1, 1, tzinfo=UTC)))
    assert services.indexer.sync_lexical(tenant.tenant_id) == feed.outbox_head(
        tenant.tenant_id) > head
    assert services.indexer.check(tenant.tenant_id)["differences"] == 0
