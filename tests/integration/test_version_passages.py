"""version_passages (0015): the placement index the vector search reads is exactly the
passage arrays of the versions, in every tenant, and an erased version's placements are
never found, even where a passage is shared with a version that is not erased."""

from __future__ import annotations

from datetime import UTC, datetime

from stichtag.bootstrap import Services
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest
from tests.conftest import make_tenant

SHARED = "# § 3 Aufsicht\n\n(1) Die Aufsicht prüft die Rückstellung jährlich.\n"


def _placements(services: Services, who: Principal) -> tuple[list[tuple[int, int, int]],
                                                              list[tuple[int, int, int]]]:
    """(version_no, ordinal, passage_id) from the table and from the arrays."""
    with services.store.tx(who.tenant_id) as conn:
        table = conn.execute("SELECT version_no, ordinal, passage_id FROM version_passages "
                             "ORDER BY 1, 2").fetchall()
        arrays = conn.execute(
            "SELECT v.version_no, (u.ord - 1)::int, u.passage_id FROM versions v "
            "CROSS JOIN LATERAL unnest(v.passage_ids) WITH ORDINALITY AS u(passage_id, ord) "
            "ORDER BY 1, 2").fetchall()
    return [tuple(r) for r in table], [tuple(r) for r in arrays]


def test_the_index_mirrors_the_arrays_and_erased_placements_stay_hidden(
        services: Services) -> None:
    a, b = make_tenant(services, "vp-a"), make_tenant(services, "vp-b")
    docs = services.documents
    zins = "# § 1 Zins\n\n(1) Der Zins beträgt {} Prozent.\n\n"
    # the same section twice in one version: one passage id at two ordinals
    twice = zins.format(2) + "# § 2 Tafel\n\n(1) Es gilt die Tafel 2004.\n\n" + zins.format(2)
    docs.ingest(a, "law", IngestRequest(text=twice + SHARED,
                                        valid_from=datetime(2020, 1, 1, tzinfo=UTC)))
    docs.ingest(a, "law", IngestRequest(text=zins.format(3) + SHARED,
                                        valid_from=datetime(2022, 1, 1, tzinfo=UTC)))
    note = docs.ingest(a, "note", IngestRequest(text=SHARED,
                                                valid_from=datetime(2021, 1, 1, tzinfo=UTC)))
    docs.ingest(b, "law", IngestRequest(text=SHARED, valid_from=datetime(2020, 1, 1, tzinfo=UTC)))
    for who in (a, b):
        services.indexer.catch_up(who.tenant_id)

    table, arrays = _placements(services, a)
    assert table == arrays and len(table) == 4 + 2 + 1
    assert [no for no, _, _ in table] == [1, 1, 1, 1, 2, 2, 3]  # the tenant's own numbers
    first = [pid for no, _, pid in table if no == 1]
    assert first[0] == first[2] != first[1]  # § 1 twice: one passage, two placements
    shared = first[3]
    assert {pid for no, _, pid in table if no in (2, 3)} >= {shared}
    table_b, arrays_b = _placements(services, b)
    assert table_b == arrays_b == [(1, 0, table_b[0][2])]  # b sees only its own rows

    now = datetime.now(UTC)
    question = "Wie oft prüft die Aufsicht die Rückstellung?"

    def found(plan: int | None) -> set[tuple[int, int]]:
        hits = services.search.vector_candidates(a, question, valid_at=now, known_at=now,
                                                 k=10, hnsw_from=plan)
        return {key for key, _ in hits}

    note_assertion = next(r.assertion_id for r in docs.history(a, "note"))
    before = found(0)
    assert before == found(None)  # HNSW-driven and filter-first agree
    assert note_assertion in {aid for aid, _ in before}

    services.erasures.erase(a, note.version_id, reason="test: placements of an erased version")
    after_hnsw, after_filter = found(0), found(None)
    assert after_hnsw == after_filter
    assert note_assertion not in {aid for aid, _ in after_hnsw}
    # the passage it shared with the law's current version is still found there
    law_now = next(r.assertion_id for r in docs.history(a, "law") if r.tx_to is None
                   and r.valid_to is None)
    assert (law_now, 1) in after_hnsw
    assert _placements(services, a)[0] == table  # erasure removes content, not ids
