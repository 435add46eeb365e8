"""Readable renderings of the API's results for an assistant's model (docs/assistants.md,
"Tools and the prompt"): every sentence with its Fundstelle — document, version, offsets,
quote — and every abstention with its reason, values and next step. The structured
content beside them is the API's JSON, unchanged."""

from __future__ import annotations

from stichtag.api import schemas as s
from stichtag.api.schemas.compare import CompareResponse

_QUOTE = 400  # characters of a quote shown; the structured content has all of it


def _short(text: str, limit: int = _QUOTE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def fundstelle(c: s.CitationOut) -> str:
    """One Fundstelle on one line."""
    where = " › ".join(c.heading_path)
    return (f"{c.document} @ {c.version_id[:19]} [{c.start}, {c.end})"
            f"{' ' + where if where else ''}: „{_short(c.quote)}“")


def _as_of(a: s.AsOf) -> str:
    return f"as of valid_at {a.valid_at}, known_at {a.known_at}"


def _abstained(reason: str | None, threshold: float | None, observed: float | None,
               next_step: str | None, detail: str | None = None) -> list[str]:
    lines = [f"ABSTAINED: {reason}" + (f" (observed {observed}, threshold {threshold})"
                                       if threshold is not None or observed is not None
                                       else "")]
    if detail:
        lines.append(f"Detail: {detail}")
    if next_step:
        lines.append(f"Next step: {next_step}")
    return lines


def answer(r: s.AnswerResponse) -> str:
    """An answer sentence by sentence, each with its Fundstellen, or the abstention."""
    head = f"Answer {r.status} ({_as_of(r.as_of)}; run {r.run_id})"
    if r.status == "abstained":
        return "\n".join([head, *_abstained(r.reason, r.threshold, r.observed, r.next_step)])
    lines = [head]
    for i, sentence in enumerate(r.sentences, start=1):
        lines.append(f"{i}. {sentence.text}")
        lines.extend(f"   ↳ {fundstelle(c)}" for c in sentence.citations)
        if not sentence.citations:
            lines.append("   ↳ (no Fundstelle)")
    if r.listing is not None:
        lines.extend(f"- {item.document} @ {item.version_id[:19]}" for item in r.listing.items)
    if r.gaps:
        lines.append("Not covered: " + "; ".join(r.gaps))
    if r.source_line:
        lines.append("Sources: " + ", ".join(r.source_line))
    return "\n".join(lines)


def compare(r: CompareResponse) -> str:
    """Both answers, then per cited document what changed and its cause."""
    lines = [f"Comparison (record {r.run_id}): {r.summary}", "", "FROM: " + answer(r.from_),
             "", "TO: " + answer(r.to), "", "Changes:" if r.changes else "Changes: none cited"]
    for c in r.changes:
        versions = f"{(c.from_version or '—')[:19]} → {(c.to_version or '—')[:19]}"
        lines.append(f"- {c.document}: {c.kind}, cause {c.cause} ({versions})"
                     + (f": {c.explanation}" if c.explanation else ""))
    return "\n".join(lines)


def evidence(r: s.EvidenceResponse) -> str:
    """The numbered evidence an answer may cite as [n], or the refusal."""
    head = f"Evidence {r.status} ({_as_of(r.as_of)}; run_id {r.run_id})"
    if r.status == "abstained":
        return "\n".join([head, *_abstained(r.reason, r.threshold, r.observed, r.next_step)])
    lines = [head, "Cite each statement with the number of the evidence it rests on, "
             f"e.g. [1]; check the answer with check_answer(run_id={r.run_id!r})."]
    for e in r.evidence:
        where = " › ".join(e.heading_path)
        lines.append(f"[{e.n}] {e.document} @ {e.version_id[:19]} [{e.start}, {e.end})"
                     f"{' ' + where if where else ''}: „{_short(e.quote)}“")
    return "\n".join(lines)


def check(r: s.CheckResponse) -> str:
    """The checked answer: the verdict, then every sentence with what its references
    resolved to (or why not)."""
    head = (f"Check {r.status} ({_as_of(r.as_of)}; run {r.run_id}"
            + (f"; coverage {r.coverage:.2f}" if r.coverage is not None else "") + ")")
    lines = [head]
    if r.status == "abstained":
        lines.extend(_abstained(r.reason, r.threshold, r.observed, r.next_step, r.detail))
    for i, sentence in enumerate(r.sentences, start=1):
        lines.append(f"{i}. {sentence.text}")
        lines.extend(f"   ↳ {fundstelle(c)}" for c in sentence.citations)
        lines.extend(f"   ✗ {ref.label}: {ref.failure} {ref.detail}".rstrip()
                     for ref in sentence.references if not ref.resolved)
        if not sentence.references:
            lines.append("   ↳ (no Fundstelle)")
    if r.gaps:
        lines.append("Uncited: " + "; ".join(r.gaps))
    return "\n".join(lines)


def document(r: s.DocumentResponse) -> str:
    """The version in force, with its text."""
    a = r.assertion
    return "\n".join([
        f"{r.document} @ {r.version_id} ({_as_of(r.as_of)})",
        f"valid [{a.valid_from}, {a.valid_to or '∞'}), known since {a.tx_from}",
        "", r.text])


def history(r: s.HistoryResponse) -> str:
    """Every assertion on both time axes, one line each."""
    lines = [f"History of {r.document}: {len(r.assertions)} assertions"]
    lines.extend(f"- {a.version_id[:19]} valid [{a.valid_from}, {a.valid_to or '∞'}) known "
                 f"[{a.tx_from}, {a.tx_to or '∞'}){' ' + a.ended if a.ended else ''}"
                 for a in r.assertions)
    return "\n".join(lines)


def search(r: s.SearchResponse) -> str:
    """Hits with their places."""
    lines = [f"Search ({_as_of(r.as_of)}; run {r.run_id}): {len(r.hits)} hits"]
    lines.extend(_hit(i, h) for i, h in enumerate(r.hits, start=1))
    return "\n".join(lines)


def _hit(i: int, h: s.SearchHit) -> str:
    where = " › ".join(h.heading_path)
    return (f"{i}. {h.document} @ {h.version_id[:19]} [{h.start}, {h.end})"
            f"{' ' + where if where else ''}: „{_short(h.text, 300)}“")

