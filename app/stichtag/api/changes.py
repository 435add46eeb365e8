"""The knowledge diff: GET /v1/changes (thin controller; rules in stichtag.domain.changes)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.params import FromPath, QueryParameter

from stichtag.api import convert
from stichtag.api.deps import Svc, Who, optional_time
from stichtag.api.schemas import (
    ChangesResponse,
    ChangeWindow,
    DiffSentenceOut,
    DocumentChangesOut,
    SentenceChangeOut,
    SentenceDiffOut,
    ValidRange,
    VersionDiffResponse,
    VersionPairOut,
)
from stichtag.domain.sentence_diff import DiffSentence, SentenceDiff
from stichtag.domain.timeutil import format_time, parse_time
from stichtag.services.changes import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_SENTENCES,
    MAX_SENTENCES,
    ChangeReport,
    PairDiff,
)

_TIME = "RFC 3339 with offset, or YYYY-MM-DD (midnight in the tenant's time zone)"


def _side(s: DiffSentence | None) -> DiffSentenceOut | None:
    if s is None:
        return None
    return DiffSentenceOut(start=s.start, end=s.end, utf16_start=s.utf16_start,
                           utf16_end=s.utf16_end, text=s.text,
                           heading_path=list(s.heading_path))


def sentence_diff(d: SentenceDiff) -> SentenceDiffOut:
    """A public sentence diff."""
    return SentenceDiffOut(
        added=d.added, removed=d.removed, changed=d.changed, unchanged=d.unchanged,
        sentences=[SentenceChangeOut(op=c.op, old=_side(c.old), new=_side(c.new),
                                     similarity=c.similarity) for c in d.changes],
        truncated=d.truncated)


def _pair(p: PairDiff) -> VersionPairOut:
    return VersionPairOut(
        from_version=p.pair.from_version, to_version=p.pair.to_version,
        from_state=p.pair.from_state, to_state=p.pair.to_state,
        ranges=[ValidRange(valid_from=convert.iso(r.start), valid_to=format_time(r.end))
                for r in p.pair.ranges],
        assertion_ids=list(p.pair.assertion_ids),
        diff=sentence_diff(p.diff) if p.diff is not None else None)


def changes_response(report: ChangeReport) -> ChangesResponse:
    """The public form of a change report (shared by the API and the CLI's --json)."""
    rows = report.rows
    return ChangesResponse(
        window=ChangeWindow(known_from=convert.iso(report.window.known_from),
                            known_to=convert.iso(report.window.known_to)),
        document=report.document,
        documents=[DocumentChangesOut(
            document=d.changes.document, new_document=d.changes.new_document,
            appeared=[convert.assertion(rows[r.assertion_id]) for r in d.changes.appeared],
            ended=[convert.assertion(rows[r.assertion_id]) for r in d.changes.ended],
            corrected=[convert.assertion(rows[r.assertion_id]) for r in d.changes.corrected],
            pairs=[_pair(p) for p in d.pairs], truncated=d.truncated)
            for d in report.documents],
        counts=report.counts, truncated=report.truncated, limits=report.limits,
        erasures=[convert.erasure(e) for e in report.erasures])


class ChangeController(Controller):
    """Knowledge diffs between two transaction times."""

    path = "/v1/changes"
    tags = ("documents",)

    @get("/", operation_id="getChanges", sync_to_thread=True)
    def changes(
        self, svc: Svc, who: Who, *,
        known_from: Annotated[str, QueryParameter(
            description=f"start of the window, exclusive; {_TIME}")],
        known_to: Annotated[str | None, QueryParameter(
            description=f"end of the window, inclusive; {_TIME}; default now; "
                        "a time after now is read as now")] = None,
        document: Annotated[str | None, QueryParameter(
            description="only this document key; default the whole tenant")] = None,
        diff: Annotated[bool, QueryParameter(
            description="sentence diffs of the version pairs (default true)")] = True,
        limit: Annotated[int, QueryParameter(
            description="assertion entries listed at most (1-1000)")] = DEFAULT_LIMIT,
        max_sentences: Annotated[int, QueryParameter(
            description="sentence changes listed per pair (0-200)")] = DEFAULT_MAX_SENTENCES,
    ) -> ChangesResponse:
        """Per document, the assertions that appeared, ended or were corrected in
        ``(known_from, known_to]``, with sentence diffs of the versions involved."""
        k_from = parse_time(known_from, field="known_from", tz=who.time_zone)
        k_to = optional_time(who, known_to, field="known_to") or svc.clock.now()
        return changes_response(svc.changes.changes(
            who, known_from=k_from, known_to=k_to, document=document, diff=diff, limit=limit,
            max_sentences=max_sentences))


class VersionDiffController(Controller):
    """Sentence diffs of two immutable versions (the console's history compare)."""

    path = "/v1/versions"
    tags = ("documents",)

    @get("/{version_id:str}/diff", operation_id="diffVersions", sync_to_thread=True)
    def diff(
        self, version_id: FromPath[str], svc: Svc, who: Who,
        to_version_id: Annotated[str, QueryParameter(
            description="the version to compare with (the newer one, usually)")],
        max_sentences: Annotated[int, QueryParameter(
            description="sentence changes listed at most (0-200)")] = MAX_SENTENCES,
    ) -> VersionDiffResponse:
        """Sentences added, removed and changed from ``version_id`` to ``to_version_id``."""
        result = svc.changes.compare(who, version_id, to_version_id, max_sentences=max_sentences)
        return VersionDiffResponse(from_version=version_id, to_version=to_version_id,
                                   diff=sentence_diff(result))
