"""Worked examples of the public objects, written into ``schemas/`` with their schemas.

They are built from one small version of the DeckRV through the same conversion as the
server's responses (``convert.citation``), so offsets, UTF-16 offsets and quotes agree
with the text; ``tests/unit/test_published_schemas.py`` validates each example against its
schema.
"""

from __future__ import annotations

from typing import Any

import msgspec

from stichtag.api import convert, log, records, review
from stichtag.api import schemas as s
from stichtag.api.schemas.compare import (
    CompareChangeOut,
    CompareResponse,
    LawChangeOut,
    ValidityOut,
)
from stichtag.api.schemas.receipts import (
    ReceiptAnswer,
    ReceiptAsOf,
    ReceiptCitation,
    ReceiptLog,
    ReceiptOut,
    ReceiptSentence,
)
from stichtag.domain.answer import INSUFFICIENT_EVIDENCE
from stichtag.domain.fundstelle import Citation, utf16_units
from stichtag.domain.selectors import quote_context
from stichtag.domain.text import version_id

TEXT = ("# DeckRV\n\n## § 2 Höchstzinssatz\n\n(1) Der Höchstzinssatz für die Berechnung der "
        "Deckungsrückstellungen beträgt 0,25 Prozent. (2) Er gilt ab dem 1. Januar 2022.\n")
VERSION = version_id(TEXT)
QUOTE = ("(1) Der Höchstzinssatz für die Berechnung der Deckungsrückstellungen beträgt "
         "0,25 Prozent.")
HEADING = ("DeckRV", "§ 2 Höchstzinssatz")
TENANT = "0b6f4c1e-8d2a-4c53-9a57-3f1e2d4c5b6a"
RUN = "5f0c2a8e-3b1d-4e6f-9a7c-1d2e3f4a5b6c"
KEY = "k_7Qx2mN4p"
T0 = "2021-12-01T09:30:00Z"
T1 = "2026-11-30T08:15:02Z"
AS_OF = s.AsOf(valid_at="2022-01-01T00:00:00Z", known_at=T1)


def _citation() -> s.CitationOut:
    start = TEXT.index(QUOTE)
    end = start + len(QUOTE)
    prefix, suffix = quote_context(TEXT, start, end)
    return convert.citation(Citation(
        document="deckrv", version_id=VERSION, start=start, end=end,
        utf16_start=utf16_units(TEXT[:start]), utf16_end=utf16_units(TEXT[:end]), quote=QUOTE,
        heading_path=HEADING, prefix=prefix, suffix=suffix,
        valid_from="2022-01-01T00:00:00Z", valid_to=None))


def _assertion() -> s.Assertion:
    return s.Assertion(
        assertion_id=42, document="deckrv", version_id=VERSION,
        valid_from="2022-01-01T00:00:00Z", valid_to=None, tx_from=T0, tx_to=None,
        title="Deckungsrückstellungsverordnung", doc_class="law", confidentiality="public",
        provenance={"kind": "asserted", "key_id": KEY, "source": "BGBl. I 2021 S. 1234"},
        ended=None, ended_reason=None)


def _gates(passed: bool) -> list[s.GateOut]:
    return [s.GateOut(gate="relevance", passed=passed, threshold=0.35,
                      observed=0.81 if passed else 0.12,
                      detail="best calibrated rerank score against theta_rel")]


def _answer() -> s.AnswerResponse:
    c = _citation()
    return s.AnswerResponse(
        run_id=RUN, status="answered", reason=None, next_step=None, threshold=None,
        observed=None, sentences=[s.AnswerSentenceOut(text=QUOTE, citations=[c])],
        coverage=1.0, gates=_gates(True), gaps=[],
        sources=[s.SourceOut(id="E1-5f0c", citation=c, cited=True, consulted=True,
                             score=0.81)],
        conflicts=[], as_of=AS_OF, generator="extractive", thresholds_version=3)


def _abstention() -> s.AnswerResponse:
    return s.AnswerResponse(
        run_id=RUN, status="abstained", reason=INSUFFICIENT_EVIDENCE,
        next_step="Ingest the document that governs this question, or ask about one the "
                  "knowledge base holds.",
        threshold=0.35, observed=0.12, sentences=[], coverage=None, gates=_gates(False),
        gaps=[], sources=[], conflicts=[], as_of=AS_OF, generator="extractive",
        thresholds_version=3)


def _hit() -> s.SearchHit:
    c = _citation()
    return s.SearchHit(
        document="deckrv", version_id=VERSION, assertion_id=42, start=c.start, end=c.end,
        utf16_start=c.utf16_start, utf16_end=c.utf16_end, heading_path=list(HEADING),
        text=QUOTE, valid_from="2022-01-01T00:00:00Z", valid_to=None,
        scores=s.Scores(bm25=7.31, vector=0.88, fused=0.0328, bm25_rank=1, vector_rank=1))


def _sentence() -> s.Sentence:
    c = _citation()
    return s.Sentence(start=c.start, end=c.end, utf16_start=c.utf16_start,
                      utf16_end=c.utf16_end, hash="9e1f" + "0" * 60, heading_path=list(HEADING))


def _version() -> s.VersionResponse:
    return s.VersionResponse(version_id=VERSION, media_type="text/markdown",
                             segmenter_id="de-legal/7", length=len(TEXT),
                             utf16_length=utf16_units(TEXT), text=TEXT, sentences=[_sentence()])


def _diff() -> s.SentenceDiffOut:
    c = _citation()
    old = QUOTE.replace("0,25", "0,9")
    return s.SentenceDiffOut(
        added=0, removed=0, changed=1, unchanged=2, truncated=False,
        sentences=[s.SentenceChangeOut(
            op="changed", similarity=0.9714,
            old=s.DiffSentenceOut(start=c.start, end=c.start + len(old),
                                  utf16_start=c.utf16_start, utf16_end=c.utf16_start + len(old),
                                  text=old, heading_path=list(HEADING)),
            new=s.DiffSentenceOut(start=c.start, end=c.end, utf16_start=c.utf16_start,
                                  utf16_end=c.utf16_end, text=QUOTE,
                                  heading_path=list(HEADING)))])


def _changes() -> s.ChangesResponse:
    before = "b3:" + "4d" * 32
    return s.ChangesResponse(
        window=s.ChangeWindow(known_from=T0, known_to=T1), document=None,
        documents=[s.DocumentChangesOut(
            document="deckrv", new_document=False, appeared=[_assertion()], ended=[],
            corrected=[], truncated=False,
            pairs=[s.VersionPairOut(
                from_version=before, to_version=VERSION, from_state="version",
                to_state="version", assertion_ids=[42],
                ranges=[s.ValidRange(valid_from="2022-01-01T00:00:00Z", valid_to=None)],
                diff=_diff())])],
        counts={"documents": 1, "appeared": 1, "ended": 0, "corrected": 0}, truncated=False,
        limits={"max_documents": 100, "max_sentences": 200})


def _search_record() -> records.SearchRecord:
    c = _citation()
    return records.SearchRecord(
        run_id=RUN, tenant=TENANT, key_id=KEY, clearance=1,
        request={"query": "Höchstzinssatz 2022", "k": 10},
        as_of=records.RecordAsOf(valid_at=AS_OF.valid_at, known_at=AS_OF.known_at),
        segmenter_id="de-legal/7", analyzer_id="de-stem/2", rrf_k=60, lexical_seq=118,
        embedding_model="sha256:" + "ab" * 32,
        candidates=[{"document": "deckrv", "version_id": VERSION, "assertion_id": 42,
                     "passage": 0, "start": c.start, "end": c.end, "bm25": 7.31,
                     "vector": 0.88, "fused": 0.0328, "bm25_rank": 1, "vector_rank": 1}],
        timings_ms={"lexical": 1.9, "vector": 6.2, "total": 9.4})


def _verdict_record() -> records.ReviewVerdictRecord:
    return records.ReviewVerdictRecord(
        run_id="8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f", tenant=TENANT, key_id=KEY, clearance=1,
        sample_id="2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d", item=0, verdict="full", note=None,
        reviewer=KEY, supersedes=None,
        reviewed=records.ReviewedPair(run_id=RUN, sentence=0, citation=0, document="deckrv",
                                      version_id=VERSION, start=_citation().start,
                                      end=_citation().end))


def _erasure_record() -> records.ErasureRecord:
    return records.ErasureRecord(
        run_id="5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b", tenant=TENANT, key_id=KEY,
        version_id=VERSION, content_hash=VERSION, documents=["kundenakte"],
        assertion_ids=[42], reason="GDPR request 2026-114", erased_at=T1,
        kept=["version_id", "sentence_hashes", "offsets", "assertions", "run_records"])


CHECKPOINT_NOTE = (f"stichtag/{TENANT}\n2\nq1Vx3oWQ0c0N7rZC8h2nq5sF2pX8uJ3kY6aT9bL4dE0=\n{T1}\n\n"
                   "\u2014 stichtag-node-1 AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/AbCdEfGhIjKlMnO"
                   "pQrStUvWxYz0123456789+/AbCdEfGhIjKl=\n")


def _sample() -> review.SampleOut:
    c = _citation()
    return review.SampleOut(
        sample_id="2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d", created_by=KEY, created_at=T1,
        seed=7, strata=["document"], n_per_stratum=20,
        filters={"run_from": None, "run_to": None}, population={"deckrv": 1},
        items=[{"item": 0, "stratum": "deckrv", "run_id": RUN, "sentence": 0, "citation": 0,
                "sentence_text": QUOTE, "quote": c.quote, "version_id": VERSION,
                "start": c.start, "end": c.end, "verdict": None}])


def _evidence() -> s.EvidenceResponse:
    c = _citation()
    return s.EvidenceResponse(
        run_id=RUN, status="ready", reason=None, next_step=None, threshold=None,
        observed=None, evidence=[s.EvidenceItemOut(
            n=1, document=c.document, version_id=c.version_id, start=c.start, end=c.end,
            utf16_start=c.utf16_start, utf16_end=c.utf16_end, quote=c.quote,
            heading_path=c.heading_path, valid_from=c.valid_from, valid_to=c.valid_to,
            score=0.81)],
        gates=_gates(True), as_of=AS_OF, thresholds_version=3)


def _check() -> s.CheckResponse:
    c = _citation()
    return s.CheckResponse(
        run_id=RUN, status="abstained", reason="invented_citation",
        next_step="A marker names no Fundstelle of the evidence run: cite only the numbers "
                  "the evidence lists, or fetch evidence again for this question.",
        threshold=0.0, observed=1.0, detail=f"[4]: names no Fundstelle of evidence run {RUN}",
        coverage=None, gaps=[], sentences=[
            s.CheckSentenceOut(text="Der Höchstzinssatz beträgt 0,25 Prozent [1].",
                               citations=[c], references=[s.CheckReferenceOut(
                                   label="[1]", resolved=True)]),
            s.CheckSentenceOut(text="Er gilt seit 2022 [4].", citations=[],
                               references=[s.CheckReferenceOut(
                                   label="[4]", resolved=False, failure="invented_citation",
                                   detail=f"names no Fundstelle of evidence run {RUN}")])],
        gates=[s.GateOut(gate="citations", passed=False, threshold=0.0, observed=1.0,
                         detail=f"[4]: names no Fundstelle of evidence run {RUN}")],
        as_of=AS_OF, evidence_run=RUN, thresholds_version=3, source_line=[])


def _compare() -> CompareResponse:
    before = "b3:" + "4d" * 32
    return CompareResponse(
        run_id="3f4a5b6c-7d8e-4f90-a1b2-c3d4e5f6a7b8", from_=_abstention(), to=_answer(),
        summary="abstained then, answered now: deckrv: the law changed: version "
                f"{VERSION[:15]}… of deckrv is in force since 2022-01-01T00:00:00Z",
        changes=[CompareChangeOut(
            document="deckrv", kind="added", cause="valid_time", from_version=None,
            to_version=VERSION,
            explanation=f"deckrv: the law changed: version {VERSION[:15]}… of deckrv is in "
                        "force since 2022-01-01T00:00:00Z",
            law=LawChangeOut(
                from_=ValidityOut(assertion_id=41, version_id=before,
                                  valid_from="2017-01-01T00:00:00Z",
                                  valid_to="2022-01-01T00:00:00Z"),
                to=ValidityOut(assertion_id=42, version_id=VERSION,
                               valid_from="2022-01-01T00:00:00Z", valid_to=None)),
            knowledge=[], diff=None)])


def _compare_record() -> records.CompareRecord:
    side = records.CompareSide(
        run_id=RUN, as_of=records.RecordAsOf(valid_at=AS_OF.valid_at, known_at=AS_OF.known_at),
        status="answered", reason=None,
        cited=[{"document": "deckrv", "version_id": VERSION, "spans": [[120, 188]]}])
    return records.CompareRecord(
        run_id="3f4a5b6c-7d8e-4f90-a1b2-c3d4e5f6a7b8", tenant=TENANT, key_id=KEY, clearance=1,
        request={"question": "Welcher Höchstzinssatz gilt?", "generator": "extractive"},
        from_=side, to=side, segmenter_id="de-legal/7",
        changes=[{"document": "deckrv", "kind": "unchanged", "cause": "none",
                  "from_version": VERSION, "to_version": VERSION, "law": None,
                  "knowledge": []}],
        summary="the cited facts are the same at both pairs")


def _receipt() -> ReceiptOut:
    c = _citation()
    quoted = c.selector[0]
    assert isinstance(quoted, s.TextQuoteSelector)
    return ReceiptOut(
        format="stichtag-receipt/1", run_id=RUN, kind="answer", tenant=TENANT,
        answer=ReceiptAnswer(
            question="Welcher Höchstzinssatz gilt?",
            as_of=ReceiptAsOf(valid_at=AS_OF.valid_at, known_at=AS_OF.known_at),
            status="answered", reason=None,
            sentences=[ReceiptSentence(text=QUOTE, citations=[ReceiptCitation(
                document="deckrv", version_id=VERSION, start=c.start, end=c.end,
                quote=c.quote, prefix=quoted.prefix, suffix=quoted.suffix,
                content_hash=VERSION,
                selector=[s.TextQuoteSelector(exact=c.quote, prefix=quoted.prefix,
                                              suffix=quoted.suffix),
                          s.TextPositionSelector(start=c.start, end=c.end)])])]),
        record={"kind": "answer", "run_id": RUN, "tenant": TENANT, "key_id": KEY,
                "clearance": 1, "request": {"question": "Welcher Höchstzinssatz gilt?",
                                            "generator": "extractive"},
                "as_of": {"valid_at": AS_OF.valid_at, "known_at": AS_OF.known_at},
                "candidates": [], "evidence": [], "gates": [],
                "result": {"status": "answered", "reason": None, "sentences": [
                    {"text": QUOTE, "citations": [{"version_id": VERSION, "start": c.start,
                                                   "end": c.end}]}]}},
        log=ReceiptLog(seq=0, leaf_hash="n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=",
                       tree_size=2, inclusion=["bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0="],
                       checkpoint=CHECKPOINT_NOTE, key_name="stichtag-node-1",
                       key_id="AbCdEg=="))


def examples() -> dict[str, list[Any]]:
    """The examples of each published schema, by its file stem."""
    return {
        "answer": [_answer()],
        "abstention": [_abstention()],
        "evidence": [_evidence()],
        "check": [_check()],
        "citation": [_citation()],
        "resolution": [s.ResolveResponse(
            citation=_citation(), context_before=TEXT[:TEXT.index(QUOTE)],
            context_after=TEXT[TEXT.index(QUOTE) + len(QUOTE):], current_version_id=VERSION,
            status="unchanged", similarity=1.0, current=_citation())],
        "anchor": [s.AnchorResponse(
            document="deckrv", source="b3:" + "4d" * 32, current_version_id=VERSION,
            matched="fuzzy", similarity=0.9714, occurrences=0, current=_citation())],
        "search": [s.SearchResponse(run_id=RUN, as_of=AS_OF, hits=[_hit()], lexical_seq=118)],
        "search-hit": [_hit()],
        "document": [s.DocumentResponse(
            document="deckrv", version_id=VERSION, as_of=AS_OF, assertion=_assertion(),
            media_type="text/markdown", segmenter_id="de-legal/7", text=TEXT,
            sentences=[_sentence()])],
        "version": [_version()],
        "assertion": [_assertion()],
        "history": [s.HistoryResponse(document="deckrv", assertions=[_assertion()])],
        "erasure": [s.ErasureOut(
            erasure=s.ErasureRecordOut(
                version_id=VERSION, content_hash=VERSION, erased_at=T1, erased_by=KEY,
                reason="GDPR request 2026-114", log_seq=7,
                run_id="5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"),
            erased=True, documents=["kundenakte"], assertion_ids=[42],
            blanked={"blocks": 3, "heading_paths": 1, "passages": 2, "originals": 0})],
        "ingest": [s.IngestResponse(version_id=VERSION, created=True, asserted=True,
                                    tx_time=T0, assertion=_assertion(), closed=[41],
                                    opened=[42])],
        "knowledge-diff": [_changes()],
        "version-diff": [s.VersionDiffResponse(from_version="b3:" + "4d" * 32,
                                               to_version=VERSION, diff=_diff())],
        "run": [s.RunResponse(run_id=RUN, kind="search", key_id=KEY, created_at=T1,
                              record=records_builtins(_search_record()))],
        "run-record": [_search_record(), _verdict_record(), _erasure_record(),
                       _compare_record()],
        "compare": [_compare()],
        "receipt": [_receipt()],
        "replay-verdict": [s.VerdictOut(run_id=RUN, kind="answer", reproduced=True,
                                        differences=[], notes=["extractive: regenerated"])],
        "log-leaf": [records.LogLeaf(seq=0, record=_search_record())],
        "checkpoint": [log.CheckpointOut(
            checkpoint=CHECKPOINT_NOTE, size=2,
            root="q1Vx3oWQ0c0N7rZC8h2nq5sF2pX8uJ3kY6aT9bL4dE0=",
            public_key="-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA...\n"
                       "-----END PUBLIC KEY-----\n")],
        "inclusion-proof": [log.InclusionOut(
            seq=0, size=2, leaf_hash="n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=",
            proof=["bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0="], checkpoint=CHECKPOINT_NOTE)],
        "consistency-proof": [log.ConsistencyOut(
            old=1, new=2, proof=["bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0="],
            checkpoint=CHECKPOINT_NOTE)],
        "export-line": [
            records.ExportHeader(format="stichtag-log-export/1", tenant=TENANT,
                                 origin=f"stichtag/{TENANT}"),
            records.LogLeaf(seq=0, record=_search_record()),
            records.ExportCheckpoint(checkpoint=CHECKPOINT_NOTE)],
        "review-sample": [_sample()],
        "review-verdict": [review.VerdictOut(
            verdict_id="8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f",
            sample_id="2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d", item=0, verdict="full",
            note=None, reviewer=KEY, supersedes=None, created_at=T1, seq=3)],
        "problem": [
            s.Problem(type="about:blank", title="Bad Request", status=400,
                      detail="valid_at: not an RFC 3339 time or date",
                      errors=[s.FieldError(field="valid_at",
                                           reason="not an RFC 3339 time or date")]),
            s.Problem(type="about:blank", title="Too Many Requests", status=429,
                      detail="This key's request rate is exhausted.", limit="key_rate",
                      retry_after=2)],
    }


def records_builtins(record: records.SearchRecord) -> dict[str, Any]:
    """A record as the run endpoint returns it: a plain JSON object."""
    out: dict[str, Any] = msgspec.to_builtins(record)
    return out
