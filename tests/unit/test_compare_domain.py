"""The causes of a compared answer, from the bitemporal history alone
(app/stichtag/domain/compare.py; docs/audit.md, "Compared answers")."""

from __future__ import annotations

from datetime import UTC, datetime

from stichtag.domain.asof import AsOf
from stichtag.domain.bitemporal import Interval
from stichtag.domain.compare import Cited, Held, cause_of, compare, summary


def _t(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _held(aid: int, version: str, valid: tuple[int, int | None], tx: tuple[int, int | None],
          ended: str | None = None) -> Held:
    return Held(assertion_id=aid, version_id=version,
                valid=Interval(start=_t(valid[0]), end=_t(valid[1]) if valid[1] else None),
                tx=Interval(start=_t(tx[0]), end=_t(tx[1]) if tx[1] else None), ended=ended)


# v1 in force from 2010, v2 from 2020 (both known since they were in force); in 2023 a
# backdated v3 was asserted for [2015, 2020), closing v1's assertion for that time.
HISTORY = [
    _held(1, "b3:v1", (2010, 2020), (2010, 2023), ended="superseded"),
    _held(2, "b3:v2", (2020, None), (2020, None)),
    _held(3, "b3:v1", (2010, 2015), (2023, None)),
    _held(4, "b3:v3", (2015, 2020), (2023, None)),
]


def _at(valid: int, known: int) -> AsOf:
    return AsOf(valid_at=_t(valid, 6), known_at=_t(known, 6))


def test_another_version_in_force_is_a_change_in_valid_time() -> None:
    cause, law, knowledge = cause_of(HISTORY, _at(2012, 2024), _at(2021, 2024))
    assert cause == "valid_time" and knowledge == ()
    assert law is not None and law["to"]["version_id"] == "b3:v2"
    assert law["to"]["valid_from"].startswith("2020-01-01")
    assert law["from"]["version_id"] == "b3:v1"


def test_a_backdated_version_is_a_change_in_transaction_time_naming_the_assertions() -> None:
    cause, law, knowledge = cause_of(HISTORY, _at(2017, 2022), _at(2017, 2024))
    assert cause == "transaction_time" and law is None
    assert [(k["assertion_id"], k["change"]) for k in knowledge] == [(1, "superseded"),
                                                                     (4, "backdated")]
    assert knowledge[0]["at"].startswith("2023-01-01")


def test_both_axes_and_neither() -> None:
    assert cause_of(HISTORY, _at(2021, 2022), _at(2017, 2024))[0] == "both"
    assert cause_of(HISTORY, _at(2021, 2022), _at(2022, 2024))[0] == "none"


def test_a_retraction_removes_the_document_and_says_when() -> None:
    history = [_held(1, "b3:v1", (2010, None), (2010, 2023), ended="retracted")]
    changes = compare({"d": Cited(version_id="b3:v1", spans=frozenset({(0, 5)}))}, {},
                      {"d": history}, _at(2012, 2022), _at(2012, 2024))
    [c] = changes
    assert (c.kind, c.cause, c.from_version, c.to_version) == ("removed", "transaction_time",
                                                               "b3:v1", None)
    assert "retracted on 2023-01-01" in c.explanation
    line = summary("answered", "abstained", "insufficient_evidence", changes)
    assert line.startswith("answered then, abstained now (insufficient_evidence)")
    assert "retracted on 2023-01-01" in line


def test_kinds_per_document() -> None:
    same = Cited(version_id="b3:v2", spans=frozenset({(0, 5)}))
    other_span = Cited(version_id="b3:v2", spans=frozenset({(6, 9)}))
    v1 = Cited(version_id="b3:v1", spans=frozenset({(0, 5)}))
    history = {"u": HISTORY, "c": HISTORY, "s": HISTORY, "n": HISTORY}
    changes = compare({"u": same, "c": v1, "s": same}, {"u": same, "c": same, "s": other_span,
                                                       "n": same},
                      history, _at(2012, 2024), _at(2021, 2024))
    got = {c.document: (c.kind, c.cause, c.diffable) for c in changes}
    assert got == {"c": ("changed", "valid_time", True), "n": ("added", "valid_time", False),
                   "s": ("changed", "valid_time", False), "u": ("unchanged", "none", False)}
    assert summary("answered", "answered", None, changes).startswith("3 cited document(s)")
    assert summary("answered", "answered", None, changes[-1:]) == (
        "the cited facts are the same at both pairs")


def test_records_hold_ids_and_times_never_text() -> None:
    [c] = compare({"d": Cited(version_id="b3:v1", spans=frozenset())}, {},
                  {"d": HISTORY}, _at(2012, 2024), _at(2021, 2024))
    assert set(c.record()) == {"document", "kind", "cause", "from_version", "to_version",
                               "law", "knowledge"}
