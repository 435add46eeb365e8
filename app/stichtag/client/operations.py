"""The table of operations: each API operation once, as a function that builds its
:class:`~stichtag.client.core.Call`. ``stichtag.client.base.Operations`` turns each into a
method of both clients (``Client`` returns the result, ``AsyncClient`` an awaitable of it).

``tests/integration/test_client.py`` checks that every ``operationId`` of the published
OpenAPI document has an entry in :data:`OPERATION_IDS`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec

from stichtag.api import schemas as s
from stichtag.api.schemas.compare import CompareResponse
from stichtag.api.schemas.log import CheckpointOut, ConsistencyOut, InclusionOut
from stichtag.api.schemas.receipts import ReceiptOut
from stichtag.api.schemas.review import ReportOut, SampleListOut, SampleOut
from stichtag.api.schemas.review import VerdictOut as ReviewVerdictOut
from stichtag.client.core import Call, clean, raw_bytes, raw_text, typed


def _doc(key: str, tail: str = "") -> str:
    return f"/v1/documents/{quote(key, safe='')}{tail}"


def _ver(version_id: str, tail: str = "") -> str:
    return f"/v1/versions/{quote(version_id, safe='')}{tail}"


# -- documents -------------------------------------------------------------------------

def ingest(document: str, text: str | None = None, *, file: bytes | None = None,
           media_type: str = "text/markdown", valid_from: str | None = None,
           valid_to: str | None = None, title: str | None = None,
           doc_class: str = "document", confidentiality: str = "internal",
           tx_time: str | None = None, source: str | None = None,
           password: str | None = None, bulk: bool = False) -> Call[s.IngestResponse]:
    """Ingest a version: ``text``, or a ``file`` (PDF, HTML, DOCX, ...) sent as the body
    with ``media_type``. Idempotent: the server keys a version by its content address
    (``b3:`` + blake3 of the normalized text) and a repeat for the same range asserts
    nothing, so a 503 or a lost response is retried. ``bulk``: readers do not wait for
    the index to apply it (send the response's consistency token to wait for it)."""
    fields = clean({"valid_from": valid_from, "valid_to": valid_to, "title": title,
                    "doc_class": doc_class, "confidentiality": confidentiality,
                    "tx_time": tx_time, "source": source})
    flag = {"bulk": "true"} if bulk else {}
    decode = typed(s.IngestResponse)
    if file is not None:
        headers = {"Content-Type": media_type}
        if password is not None:
            headers["Stichtag-Document-Password"] = password
        return Call("POST", _doc(document, "/versions"), decode, params={**fields, **flag},
                    content=file, headers=headers, idempotent=True)
    return Call("POST", _doc(document, "/versions"), decode, idempotent=True, params=flag,
                json=clean({"text": text, "media_type": media_type, "password": password,
                            **fields}))


def ingest_file(document: str, path: str | Path, *, media_type: str | None = None,
                **fields: Any) -> Call[s.IngestResponse]:
    """Ingest a file from disk (read when the call is built); the server sniffs its type
    unless ``media_type`` is given. ``fields`` are those of :func:`ingest`."""
    return ingest(document, file=Path(path).read_bytes(),
                  media_type=media_type or "application/octet-stream", **fields)


def document(document: str, *, valid_at: str | None = None, known_at: str | None = None,
             include_sentences: bool = False) -> Call[s.DocumentResponse]:
    """The version in force at the as-of pair (defaults: now)."""
    return Call("GET", _doc(document), typed(s.DocumentResponse), idempotent=True,
                params=clean({"valid_at": valid_at, "known_at": known_at,
                              "include_sentences": include_sentences or None}))


def history(document: str) -> Call[s.HistoryResponse]:
    """Every assertion of a document on both time axes."""
    return Call("GET", _doc(document, "/history"), typed(s.HistoryResponse), idempotent=True)


def retract(document: str, *, valid_from: str, reason: str,
            tx_time: str | None = None, bulk: bool = False) -> Call[s.WriteResponse]:
    """End a document's validity from ``valid_from`` on (not repeated on 503; ``bulk`` as
    for :func:`ingest`)."""
    return Call("POST", _doc(document, "/retract"), typed(s.WriteResponse), safe=False,
                params={"bulk": "true"} if bulk else {},
                json=clean({"valid_from": valid_from, "reason": reason, "tx_time": tx_time}))


def correct(document: str, *, assertion_id: int, reason: str) -> Call[s.WriteResponse]:
    """End an assertion's transaction time without successor: it was never true."""
    return Call("POST", _doc(document, "/corrections"), typed(s.WriteResponse), safe=False,
                json={"assertion_id": assertion_id, "reason": reason})


def version(version_id: str) -> Call[s.VersionResponse]:
    """An immutable version with its sentences."""
    return Call("GET", _ver(version_id), typed(s.VersionResponse), idempotent=True)


def erase(version_id: str, *, reason: str) -> Call[s.ErasureOut]:
    """Erase a version's text (GDPR Art. 17; scope admin). Repeating it changes nothing
    (200 with the first erasure), but it is not resent on a lost response either."""
    return Call("POST", _ver(version_id, "/erase"), typed(s.ErasureOut), safe=False,
                json={"reason": reason})


def version_diff(version_id: str, to_version_id: str, *,
                 max_sentences: int | None = None) -> Call[s.VersionDiffResponse]:
    """Sentences added, removed and changed from one version to another."""
    return Call("GET", _ver(version_id, "/diff"), typed(s.VersionDiffResponse),
                idempotent=True, params=clean({"to_version_id": to_version_id,
                                               "max_sentences": max_sentences}))


def original(version_id: str, *, original_id: str | None = None) -> Call[bytes]:
    """The file a version was extracted from, byte for byte as uploaded."""
    return Call("GET", _ver(version_id, "/original"), raw_bytes, idempotent=True,
                params=clean({"original_id": original_id}))


def page(version_id: str, page: int, *, pixels: int | None = None) -> Call[bytes]:
    """Page ``page`` (1-based) of a PDF original as PNG bytes."""
    return Call("GET", _ver(version_id, f"/pages/{int(page)}"), raw_bytes, idempotent=True,
                params=clean({"pixels": pixels}))


def changes(*, known_from: str, known_to: str | None = None, document: str | None = None,
            diff: bool | None = None, limit: int | None = None,
            max_sentences: int | None = None) -> Call[s.ChangesResponse]:
    """What the knowledge base learned, ended or corrected in ``(known_from, known_to]``
    (one response, cut at ``limit`` entries; ``iter_changes`` pages through all)."""
    return Call("GET", "/v1/changes", typed(s.ChangesResponse), idempotent=True,
                params=clean({"known_from": known_from, "known_to": known_to,
                              "document": document,
                              "diff": None if diff is None else str(diff).lower(),
                              "limit": limit, "max_sentences": max_sentences}))


# -- search, answers, citations --------------------------------------------------------

def search(query: str, *, valid_at: str | None = None, known_at: str | None = None,
           k: int = 10, wait_for_index: bool = False) -> Call[s.SearchResponse]:
    """Passages of exact versions as of the pair (recorded as a run); ``index`` says
    whether the index was complete there (``wait_for_index``: wait for it, bounded)."""
    return Call("POST", "/v1/search", typed(s.SearchResponse), json=clean(
        {"query": query, "valid_at": valid_at, "known_at": known_at, "k": k,
         "wait_for_index": wait_for_index or None}))


def answer(question: str, *, valid_at: str | None = None, known_at: str | None = None,
           generator: str = "extractive",
           wait_for_index: bool = False) -> Call[s.AnswerResponse]:
    """An answer with citations, or a reasoned abstention (a result, not an error)."""
    return Call("POST", "/v1/answer", typed(s.AnswerResponse), json=clean(
        {"question": question, "valid_at": valid_at, "known_at": known_at,
         "generator": generator, "wait_for_index": wait_for_index or None}))


def index_status() -> Call[s.IndexStatusResponse]:
    """The caller's tenant's index: outbox head, lexical position, embeddings pending,
    drain rate and time left."""
    return Call("GET", "/v1/index/status", typed(s.IndexStatusResponse), idempotent=True)


def compare(question: str, *, from_valid_at: str | None = None,
            from_known_at: str | None = None, to_valid_at: str | None = None,
            to_known_at: str | None = None,
            generator: str = "extractive") -> Call[CompareResponse]:
    """The question answered at two as-of pairs (both recorded) and, per cited document,
    what changed and why: the law (valid time), the knowledge (transaction time), both."""
    return Call("POST", "/v1/answer/compare", typed(CompareResponse), json={
        "question": question, "generator": generator,
        "from": clean({"valid_at": from_valid_at, "known_at": from_known_at}),
        "to": clean({"valid_at": to_valid_at, "known_at": to_known_at})})


def receipt(run_id: str) -> Call[ReceiptOut]:
    """A receipt of a recorded answer that verifies offline
    (``stichtag.audit.receipt.verify_receipt``)."""
    return Call("GET", f"/v1/runs/{quote(run_id, safe='')}/receipt", typed(ReceiptOut),
                idempotent=True)


def receipt_html(run_id: str) -> Call[str]:
    """The receipt as a printable HTML page (the JSON receipt is what verifies)."""
    return Call("GET", f"/v1/runs/{quote(run_id, safe='')}/receipt/html", raw_text,
                idempotent=True)


def resolve(version_id: str, start: int, end: int) -> Call[s.ResolveResponse]:
    """A citation with its context and its standing in the current version."""
    return Call("GET", "/v1/citations/resolve", typed(s.ResolveResponse), idempotent=True,
                params={"version_id": version_id, "start": start, "end": end})


def anchor(selector: list[s.Selector], *, source: str | None = None,
           document: str | None = None) -> Call[s.AnchorResponse]:
    """Find a TextQuoteSelector (e.g. ``citation.selector``) in the current version."""
    body = s.AnchorBody(selector=selector, source=source, document=document)
    return Call("POST", "/v1/citations/anchor", typed(s.AnchorResponse),
                content=msgspec.json.encode(body), headers={"Content-Type": "application/json"})


# -- answers written elsewhere (docs/assistants.md) --------------------------------------

def evidence(question: str, *, valid_at: str | None = None,
             known_at: str | None = None) -> Call[s.EvidenceResponse]:
    """Gated evidence for an answer your own model writes: numbered ``[n]``, or a
    reasoned abstention (recorded as a run; its ``run_id`` goes to :func:`check_answer`)."""
    return Call("POST", "/v1/answer/evidence", typed(s.EvidenceResponse), json=clean(
        {"question": question, "valid_at": valid_at, "known_at": known_at}))


def check_answer(answer: str, *, run_id: str | None = None,
                 citations: list[s.QuoteCitationBody] | None = None,
                 valid_at: str | None = None,
                 known_at: str | None = None) -> Call[s.CheckResponse]:
    """Hold an answer written elsewhere to the gates: markers ``[n]`` of evidence run
    ``run_id``, or quote ``citations`` at the as-of pair. Answered, partial or abstained
    (a result, not an error); recorded as a run."""
    body = s.CheckBody(answer=answer, run_id=run_id, citations=citations, valid_at=valid_at,
                       known_at=known_at)
    return Call("POST", "/v1/answer/check", typed(s.CheckResponse),
                content=msgspec.json.encode(body), headers={"Content-Type": "application/json"})


# -- runs, thresholds ------------------------------------------------------------------

def run(run_id: str) -> Call[s.RunResponse]:
    """A recorded run with its record."""
    return Call("GET", f"/v1/runs/{quote(run_id, safe='')}", typed(s.RunResponse),
                idempotent=True)


def replay(run_id: str) -> Call[s.VerdictOut]:
    """Recompute a run at its as-of pair; the verdict names every difference."""
    return Call("POST", f"/v1/runs/{quote(run_id, safe='')}/replay", typed(s.VerdictOut))


def impact(*, since: str | None = None) -> Call[s.ImpactOut]:
    """Recorded answers that would now differ (after a backdated change)."""
    return Call("GET", "/v1/impact", typed(s.ImpactOut), idempotent=True,
                params=clean({"since": since}))


def gaps(*, since: str | None = None) -> Call[s.GapsOut]:
    """Abstained questions grouped by topic."""
    return Call("GET", "/v1/gaps", typed(s.GapsOut), idempotent=True,
                params=clean({"since": since}))


def thresholds() -> Call[list[s.ThresholdOut]]:
    """The tenant's threshold versions (θ_rel, τ) with their rationale."""
    return Call("GET", "/v1/thresholds", typed(list[s.ThresholdOut]), idempotent=True)


def leverage() -> Call[s.LeverageOut]:
    """The leverage of τ measured on the tenant's recorded answers (admin scope)."""
    return Call("GET", "/v1/thresholds/leverage", typed(s.LeverageOut), idempotent=True)


def set_thresholds(*, theta_rel: float, tau: float, rationale: str,
                   theta_scope: float | None = None) -> Call[s.ThresholdOut]:
    """Record a new threshold version (scope admin)."""
    return Call("POST", "/v1/thresholds", typed(s.ThresholdOut), safe=False, json=clean(
        {"theta_rel": theta_rel, "tau": tau, "rationale": rationale,
         "theta_scope": theta_scope}))


# -- the log ---------------------------------------------------------------------------

def checkpoint() -> Call[CheckpointOut]:
    """A freshly signed checkpoint of the tenant's log and the key that verifies it."""
    return Call("GET", "/v1/log/checkpoint", typed(CheckpointOut), idempotent=True)


def inclusion(seq: int, size: int | None = None) -> Call[InclusionOut]:
    """The inclusion proof of leaf ``seq``."""
    return Call("GET", "/v1/log/proofs/inclusion", typed(InclusionOut), idempotent=True,
                params=clean({"seq": seq, "size": size}))


def consistency(old: int, new: int | None = None) -> Call[ConsistencyOut]:
    """The consistency proof between two tree sizes."""
    return Call("GET", "/v1/log/proofs/consistency", typed(ConsistencyOut), idempotent=True,
                params=clean({"old": old, "new": new}))


# -- keys ------------------------------------------------------------------------------

def keys() -> Call[s.KeyList]:
    """The tenant's API keys (no secrets)."""
    return Call("GET", "/v1/keys", typed(s.KeyList), idempotent=True)


def create_key(*, scopes: list[str], clearance: str = "internal", label: str = "",
               expires_at: str | None = None) -> Call[s.KeyCreated]:
    """A new key of this tenant (scope admin); the secret is in the response only."""
    return Call("POST", "/v1/keys", typed(s.KeyCreated), safe=False, json=clean(
        {"scopes": scopes, "clearance": clearance, "label": label, "expires_at": expires_at}))


def revoke_key(key_id: str) -> Call[s.KeyInfo]:
    """Revoke a key at once."""
    return Call("POST", f"/v1/keys/{quote(key_id, safe='')}/revoke", typed(s.KeyInfo),
                safe=False)


def rotate_key(key_id: str) -> Call[s.KeyCreated]:
    """A successor of a key with the same scopes and clearance."""
    return Call("POST", f"/v1/keys/{quote(key_id, safe='')}/rotate", typed(s.KeyCreated),
                safe=False)


# -- support review --------------------------------------------------------------------

def review_samples() -> Call[SampleListOut]:
    """The tenant's review samples."""
    return Call("GET", "/v1/review/samples", typed(SampleListOut), idempotent=True)


def create_review_sample(*, seed: int, strata: list[str] | None = None, n: int = 20,
                         run_from: str | None = None,
                         run_to: str | None = None) -> Call[SampleOut]:
    """Draw and store a reproducible stratified sample of sentence-citation pairs."""
    return Call("POST", "/v1/review/samples", typed(SampleOut), safe=False, json=clean(
        {"seed": seed, "strata": strata or [], "n": n, "run_from": run_from,
         "run_to": run_to}))


def review_sample(sample_id: str) -> Call[SampleOut]:
    """A sample's items: sentence, cited quote, current verdict."""
    return Call("GET", f"/v1/review/samples/{quote(sample_id, safe='')}", typed(SampleOut),
                idempotent=True)


def review_report(sample_id: str) -> Call[ReportOut]:
    """Support rates per stratum and overall, with the failed pairs."""
    return Call("GET", f"/v1/review/samples/{quote(sample_id, safe='')}/report",
                typed(ReportOut), idempotent=True)


def record_verdict(*, sample_id: str, item: int, verdict: str, note: str | None = None,
                   supersedes: str | None = None) -> Call[ReviewVerdictOut]:
    """Append a verdict on a sample item (it enters the run log)."""
    return Call("POST", "/v1/review/verdicts", typed(ReviewVerdictOut), safe=False,
                json=clean({"sample_id": sample_id, "item": item, "verdict": verdict,
                            "note": note, "supersedes": supersedes}))


# -- operations ------------------------------------------------------------------------

def health() -> Call[s.Health]:
    """Liveness of the node (no key needed)."""
    return Call("GET", "/healthz", typed(s.Health), idempotent=True)


def ready() -> Call[s.Health]:
    """Readiness: ``status`` is ``unavailable`` (a 503, returned, not raised) while the
    database does not answer."""
    return Call("GET", "/readyz", typed(s.Health), idempotent=True, safe=False,
                accept=frozenset({503}))


def metrics(*, operator_key: str) -> Call[str]:
    """The node's Prometheus metrics (an operator surface): on the public listener only
    with the node's STICHTAG_METRICS_KEY, which replaces the client's key for this call."""
    return Call("GET", "/metrics", raw_text, idempotent=True,
                headers={"Authorization": f"Bearer {operator_key}"})


OPERATION_IDS: dict[str, str] = {
    "ingestVersion": "ingest", "getDocumentAsOf": "document",
    "getDocumentHistory": "history", "retractDocument": "retract",
    "correctAssertion": "correct", "getVersion": "version", "diffVersions": "version_diff",
    "eraseVersion": "erase",
    "getVersionOriginal": "original", "getVersionPage": "page", "getChanges": "changes",
    "search": "search", "answer": "answer", "resolveCitation": "resolve",
    "anchorQuote": "anchor", "answerEvidence": "evidence", "checkAnswer": "check_answer",
    "getRun": "run", "replayRun": "replay",
    "retroactiveImpact": "impact", "documentationGaps": "gaps",
    "listThresholds": "thresholds", "setThresholds": "set_thresholds", "getLeverage": "leverage",
    "getCheckpoint": "checkpoint", "getInclusionProof": "inclusion",
    "getConsistencyProof": "consistency", "exportLog": "export_lines", "listKeys": "keys",
    "createKey": "create_key", "revokeKey": "revoke_key", "rotateKey": "rotate_key",
    "listReviewSamples": "review_samples", "createReviewSample": "create_review_sample",
    "getReviewSample": "review_sample", "getReviewReport": "review_report",
    "recordReviewVerdict": "record_verdict", "healthz": "health", "readyz": "ready",
    "metrics": "metrics", "compareAnswers": "compare",
    "getReceipt": "receipt", "getReceiptHtml": "receipt_html", "getIndexStatus": "index_status"}
"""The client method of each OpenAPI ``operationId``."""
