"""Domain values and store records to public Structs: each public shape is built in one
place here (the citation of every endpoint comes from ``citation``)."""

from __future__ import annotations

import base64
import binascii

from stichtag.api import schemas
from stichtag.api.schemas import (
    AnswerResponse,
    AnswerSentenceOut,
    Assertion,
    CitationBox,
    CitationOut,
    ConflictOut,
    DeliveryOut,
    DocumentSourceOut,
    GateOut,
    IndexOut,
    KeyInfo,
    LeverageOut,
    ListedOut,
    ListingOut,
    ResolveResponse,
    Scores,
    SearchHit,
    Sentence,
    SourceOut,
    TextPositionSelector,
    TextQuoteSelector,
    ThresholdOut,
    VersionSourceOut,
)
from stichtag.domain.answer import GateDecision
from stichtag.domain.asof import AsOf
from stichtag.domain.bitemporal import CONFIDENTIALITY
from stichtag.domain.errors import Invalid
from stichtag.domain.fundstelle import Citation
from stichtag.domain.leverage import LeverageReport, coverage_quantiles
from stichtag.domain.listing import Listing
from stichtag.domain.records import (
    AssertionRow,
    Erasure,
    IndexState,
    KeyRow,
    SentenceRow,
    VersionSource,
)
from stichtag.domain.retrieval import Hit
from stichtag.domain.selectors import TextQuote
from stichtag.domain.timeutil import format_time
from stichtag.services.answer_result import AnswerResult
from stichtag.services.citations import QuoteAnchor, Resolution
from stichtag.services.erasure import erasure_record
from stichtag.services.evidence import EvidenceResult
from stichtag.services.grounding import CheckResult
from stichtag.services.thresholds import Thresholds


def iso(value: object) -> str:
    """Format a non-null time."""
    out = format_time(value)  # type: ignore[arg-type]
    assert out is not None
    return out


def as_of(at: AsOf) -> schemas.AsOf:
    """The as-of pair a read used."""
    return schemas.AsOf(valid_at=iso(at.valid_at), known_at=iso(at.known_at),
                        known_at_requested=format_time(at.requested_known_at))


def citation(c: Citation) -> CitationOut:
    """The public citation of a Fundstelle (evidence, citations, conflicts, resolutions);
    ``page`` and ``boxes`` when it was placed in a PDF original."""
    boxes = [CitationBox(page=r.page, x0=b.x0, y0=b.y0, x1=b.x1, y1=b.y1,
                         page_width=r.page_width or 0.0, page_height=r.page_height or 0.0)
             for r in c.regions if r.page is not None for b in r.boxes]
    return CitationOut(document=c.document, version_id=c.version_id, start=c.start, end=c.end,
                       utf16_start=c.utf16_start, utf16_end=c.utf16_end, quote=c.quote,
                       heading_path=list(c.heading_path), valid_from=c.valid_from,
                       valid_to=c.valid_to, source=c.version_id,
                       selector=[TextQuoteSelector(exact=c.quote, prefix=c.prefix,
                                                   suffix=c.suffix),
                                 TextPositionSelector(start=c.start, end=c.end)],
                       page=boxes[0].page if boxes else None, boxes=boxes or None)


def version_source(src: VersionSource) -> VersionSourceOut:
    """Where a version came from: its original file and the extraction's provenance."""
    pages = src.provenance.get("pages")
    return VersionSourceOut(
        original_id=src.original_id, media_type=src.media_type, size=src.size,
        extractor_id=src.extractor_id, pages=pages if isinstance(pages, int) else None,
        empty_pages=[p for p in src.provenance.get("empty_pages", []) if isinstance(p, int)],
        provenance=src.provenance)


def hit(h: Hit) -> SearchHit:
    """A public search hit: the passage's Fundstelle with its scores."""
    return SearchHit(
        document=h.document, version_id=h.version_id, assertion_id=h.assertion_id,
        start=h.start, end=h.end, utf16_start=h.utf16_start, utf16_end=h.utf16_end,
        heading_path=list(h.heading_path), text=h.text, valid_from=iso(h.valid_from),
        valid_to=iso(h.valid_to) if h.valid_to else None,
        scores=Scores(bm25=h.bm25, vector=h.vector, fused=h.fused, bm25_rank=h.bm25_rank,
                      vector_rank=h.vector_rank))


def assertion(row: AssertionRow) -> Assertion:
    """A public assertion."""
    return Assertion(
        assertion_id=row.assertion_id, document=row.document, version_id=row.version_id,
        valid_from=iso(row.valid_from), valid_to=format_time(row.valid_to),
        tx_from=iso(row.tx_from), tx_to=format_time(row.tx_to), title=row.title,
        doc_class=row.doc_class, confidentiality=CONFIDENTIALITY[row.confidentiality],
        provenance=row.provenance, ended=row.ended, ended_reason=row.ended_reason)


def sentence(row: SentenceRow) -> Sentence:
    """A public sentence."""
    return Sentence(start=row.start, end=row.end, utf16_start=row.utf16_start,
                    utf16_end=row.utf16_end, hash=row.hash.hex(),
                    heading_path=list(row.heading_path))


def key_info(row: KeyRow) -> KeyInfo:
    """A key without its secret hash."""
    return KeyInfo(key_id=row.key_id, scopes=list(row.scopes),
                   clearance=CONFIDENTIALITY[row.clearance], label=row.label,
                   created_at=iso(row.created_at), expires_at=format_time(row.expires_at),
                   revoked_at=format_time(row.revoked_at), rotated_from=row.rotated_from)


def body_text(text: str | None, text_base64: str | None) -> str | bytes:
    """Exactly one of ``text`` or ``text_base64`` (raw bytes, checked as UTF-8 later)."""
    if (text is None) == (text_base64 is None):
        raise Invalid("text", "give exactly one of text or text_base64")
    if text is not None:
        return text
    assert text_base64 is not None
    try:
        return base64.b64decode(text_base64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Invalid("text_base64", "not valid base64") from exc


def answer(r: AnswerResult, at: AsOf) -> AnswerResponse:
    """The public answer or abstention."""
    return AnswerResponse(
        run_id=str(r.run_id), status=r.status, reason=r.reason, next_step=r.next_step,
        threshold=r.failed.threshold if r.failed else None,
        observed=r.failed.observed if r.failed else None,
        sentences=[AnswerSentenceOut(text=s.text, citations=[citation(c) for c in s.citations])
                   for s in r.sentences],
        coverage=r.coverage,
        gates=[GateOut(gate=g.gate, passed=g.passed, threshold=g.threshold,
                       observed=g.observed, detail=g.detail) for g in r.gates],
        gaps=r.gaps,
        sources=[SourceOut(id=e.eid, citation=citation(e), cited=e.eid in r.cited,
                           consulted=e.eid in r.provenance.consulted_evidence, score=e.score)
                 for e in r.evidence],
        conflicts=[ConflictOut(
            rule=res.rule, winner=res.winner.eid if res.winner else None,
            loser=res.loser.eid if res.loser else None,
            citations=[citation(res.conflict.first), citation(res.conflict.second)])
            for res in r.resolutions],
        as_of=as_of(at), generator=r.generator, thresholds_version=r.thresholds.version,
        source_line=list(r.provenance.consulted), documents=documents(r),
        listing=listing(r.listing) if r.listing is not None else None,
        index=index(r.index) if r.index is not None else None)


def index(state: IndexState) -> IndexOut:
    """``index`` of a search or answer."""
    return IndexOut(complete=state.complete, pending=state.pending,
                    lexical_pending=state.lexical_pending)


def documents(r: AnswerResult) -> list[DocumentSourceOut]:
    """Every cited or consulted document of an answer, in found order, with its flags."""
    p = r.provenance
    versions = {e.document: e.version_id for e in reversed(r.evidence)}
    titles: dict[str, str] = {}
    if r.listing is not None:
        for item in r.listing.items:
            versions.setdefault(item.document, item.version_id)
            titles.setdefault(item.document, item.title)
    return [DocumentSourceOut(document=d, version_id=versions[d], cited=d in p.cited,
                              consulted=d in p.consulted, opened=d in p.opened,
                              title=titles.get(d))
            for d in p.found if (d in p.cited or d in p.consulted) and d in versions]


def listing(li: Listing) -> ListingOut:
    """A list answer's items."""
    return ListingOut(kind=li.kind, subject=li.subject, window=(
        [format_time(li.window[0]), format_time(li.window[1])] if li.window else None),
        items=[ListedOut(document=i.document, version_id=i.version_id,
                         assertion_id=i.assertion_id, title=i.title,
                         valid_from=iso(i.valid_from), valid_to=format_time(i.valid_to))
               for i in li.items])


def resolution(res: Resolution) -> ResolveResponse:
    """A resolved citation with its context and its standing in the current version."""
    return ResolveResponse(
        citation=citation(res.citation), context_before=res.context_before,
        context_after=res.context_after, current_version_id=res.current_version_id,
        status=res.anchor.status, similarity=res.anchor.similarity,
        current=citation(res.current) if res.current is not None else None)


def selector_quote(selectors: list[schemas.Selector]) -> tuple[TextQuote, int | None]:
    """The TextQuoteSelector of a W3C selector list, and the position hint of a
    TextPositionSelector beside it (if any)."""
    quotes = [x for x in selectors if isinstance(x, TextQuoteSelector)]
    if len(quotes) != 1:
        raise Invalid("selector", "give exactly one TextQuoteSelector")
    if not quotes[0].exact:
        raise Invalid("selector", "the TextQuoteSelector's exact must not be empty")
    near = next((x.start for x in selectors if isinstance(x, TextPositionSelector)), None)
    q = quotes[0]
    return TextQuote(exact=q.exact, prefix=q.prefix, suffix=q.suffix), near


def quote_anchor(a: QuoteAnchor, source: str | None) -> schemas.AnchorResponse:
    """Where a TextQuoteSelector was found in the current version, and how."""
    m = a.match
    return schemas.AnchorResponse(
        document=a.document, source=source, current_version_id=a.current_version_id,
        matched=m.method if m else "none", similarity=m.similarity if m else 0.0,
        occurrences=m.occurrences if m else 0,
        current=citation(a.current) if a.current is not None else None)


def leverage(r: LeverageReport) -> LeverageOut:
    """The leverage report as ``stichtag calibrate --leverage --json`` prints it."""
    return LeverageOut(
        runs=r.runs, enough=r.enough, note=r.note, tau=r.tau, sentences=r.sentences,
        presence=r.presence, rho=r.rho, leverage_binomial=r.leverage_binomial,
        leverage_measured=r.leverage_measured,
        window_above_2=list(r.window) if r.window else None,
        coverage_quantiles=coverage_quantiles(r.coverage),
        delivery=[DeliveryOut(tau=d.tau, observed=d.observed, binomial=d.binomial,
                              beta_binomial=d.beta_binomial) for d in r.delivery])


def thresholds(t: Thresholds) -> ThresholdOut:
    """A public threshold version."""
    return ThresholdOut(version=t.version, theta_rel=t.theta_rel, tau=t.tau,
                        calibration=t.calibration.to_dict(), rationale=t.rationale,
                        set_by=t.set_by,
                        recorded_at=iso(t.recorded_at) if t.recorded_at else None,
                        theta_scope=t.theta_scope, relevance=t.relevance.to_dict())


def erasure(e: Erasure) -> schemas.ErasureRecordOut:
    """The public form of an erasure record (also the ``erasure`` of a 410 problem)."""
    return schemas.ErasureRecordOut(**erasure_record(e))


def gate(g: GateDecision) -> GateOut:
    """A gate decision as published."""
    return GateOut(gate=g.gate, passed=g.passed, threshold=g.threshold, observed=g.observed,
                   detail=g.detail)


def evidence(r: EvidenceResult, at: AsOf) -> schemas.EvidenceResponse:
    """Gated evidence for an outside formulator, numbered from 1."""
    gated = r.gated
    return schemas.EvidenceResponse(
        run_id=str(r.run_id), status=gated.status, reason=gated.reason,
        next_step=gated.next_step,
        threshold=gated.failed.threshold if gated.failed else None,
        observed=gated.failed.observed if gated.failed else None,
        evidence=[schemas.EvidenceItemOut(
            n=n, document=e.document, version_id=e.version_id, start=e.start, end=e.end,
            utf16_start=e.utf16_start, utf16_end=e.utf16_end, quote=e.quote,
            heading_path=list(e.heading_path), valid_from=e.valid_from, valid_to=e.valid_to,
            score=e.score) for n, e in enumerate(gated.evidence, start=1)],
        gates=[gate(d) for d in gated.gates], as_of=as_of(at),
        thresholds_version=r.thresholds.version)


def check(r: CheckResult, at: AsOf) -> schemas.CheckResponse:
    """The verdict on an answer written elsewhere, sentence by sentence."""
    o = r.outcome
    return schemas.CheckResponse(
        run_id=str(r.run_id), status=o.status, reason=o.reason, next_step=o.next_step,
        threshold=o.failed.threshold if o.failed else None,
        observed=o.failed.observed if o.failed else None,
        detail=o.failed.detail if o.failed else None, coverage=o.coverage, gaps=o.gaps,
        sentences=[schemas.CheckSentenceOut(
            text=s.text, citations=[citation(c) for c in r.citations_of(i)],
            references=[schemas.CheckReferenceOut(
                label=ref.label, resolved=ref.citation is not None, failure=ref.failure,
                detail=ref.detail, reanchored=ref.reanchored)
                for ref in r.references if ref.sentence == i])
            for i, s in enumerate(r.sentences)],
        gates=[gate(d) for d in o.gates], as_of=as_of(at), evidence_run=r.evidence_run,
        thresholds_version=r.thresholds.version, source_line=list(r.provenance.consulted))

