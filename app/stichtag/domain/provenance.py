"""Which documents an answer came from: the three sets of docs/architecture.md §7.

*Found* is everything retrieval (or a tool) returned: the allow-list for markers. *Cited*
is what the answer links. *Consulted* is what the generator read, derived from what it
did, never from what it says about itself: an excerpt it was shown counts only where the
answer cites it (the citation shows which of the candidates was used); a document it
opened in full counts whether or not the answer links it (a forgotten link is a
formatting error, not missing provenance); a document seen only as a title in a list is
never consulted, even when the answer links it. Only consulted documents belong in a
source line.

Documents are named by their key: at one as-of pair at most one version of a document is
in force (§3.3), so the key names the version a run read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from stichtag.domain.answer import SOURCES, Draft, Evidence, GateDecision


@dataclass(frozen=True, kw_only=True, slots=True)
class Provenance:
    """The three sets of one run, as document keys in evidence order (best first), plus
    the evidence sentences that were consulted (cited excerpts and every sentence of a
    document opened in full)."""

    found: tuple[str, ...]
    cited: tuple[str, ...]
    consulted: tuple[str, ...]
    opened: tuple[str, ...]
    titles_only: tuple[str, ...]
    consulted_evidence: frozenset[str]

    def record(self) -> dict[str, Any]:
        """The sets as the run record holds them (replay recomputes and compares them)."""
        return {"found": list(self.found), "cited": list(self.cited),
                "consulted": list(self.consulted), "opened": list(self.opened),
                "titles_only": list(self.titles_only),
                "consulted_evidence": sorted(self.consulted_evidence)}

    def is_consulted(self, document: str) -> bool:
        """Whether ``document`` may stand in a source line."""
        return document in self.consulted


NONE = Provenance(found=(), cited=(), consulted=(), opened=(), titles_only=(),
                  consulted_evidence=frozenset())
"""Nothing found, cited or read (an abstention before generation)."""


def cited_ids(draft: Draft | None) -> list[str]:
    """The evidence ids the draft's sentences carry, in order, once each."""
    if draft is None:
        return []
    return list(dict.fromkeys(e for s in draft.sentences for e in s.evidence_ids))


def derive(evidence: Sequence[Evidence], cited: Iterable[str], *,
           opened: Iterable[str] = (), read: Iterable[str] = (), titles: Iterable[str] = (),
           listed: Iterable[str] = ()) -> Provenance:
    """The three sets from what happened in a run.

    ``evidence`` is the run's found sentences (retrieved, and returned by tools);
    ``cited`` the evidence ids the delivered answer carries (ids outside ``evidence``
    are the integrity gate's business and are ignored here); ``opened`` the documents a
    generator read in full through a tool; ``read`` the evidence ids a tool returned (a
    section read is read text, cited or not); ``titles`` documents a listing tool named
    (found as a title, never a source); ``listed`` the documents the answer links that
    were seen only as a title (a list answer's items). A titled or listed document that
    was also read is consulted: reading it is what counts.
    """
    by_id = {ev.eid: ev for ev in evidence}
    cited_ev = [by_id[e] for e in dict.fromkeys(cited) if e in by_id]
    read_ev = [by_id[e] for e in dict.fromkeys(read) if e in by_id]
    opened_docs = list(dict.fromkeys(opened))
    listed_docs = list(dict.fromkeys(listed))
    title_docs = list(dict.fromkeys(titles))
    order = list(dict.fromkeys([ev.document for ev in evidence] + opened_docs + title_docs
                               + listed_docs))
    rank = {doc: i for i, doc in enumerate(order)}
    consulted_ev = {ev.eid for ev in cited_ev} | {ev.eid for ev in read_ev} | {
        ev.eid for ev in evidence if ev.document in set(opened_docs)}
    read_docs = {by_id[e].document for e in consulted_ev} | set(opened_docs)
    cited_docs = {ev.document for ev in cited_ev} | set(listed_docs)

    def ordered(docs: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted(set(docs), key=rank.__getitem__))

    return Provenance(found=ordered(order), cited=ordered(cited_docs),
                      consulted=ordered(read_docs), opened=ordered(opened_docs),
                      titles_only=ordered((set(listed_docs) | set(title_docs)) - read_docs),
                      consulted_evidence=frozenset(consulted_ev))


def gate_sources(provenance: Provenance) -> GateDecision:
    """A content answer is delivered only when the generator read at least one source.

    With the other gates passed this holds by construction (a covered sentence cites
    evidence, and a cited excerpt is consulted); the gate makes "no sources" impossible
    for a delivered content answer instead of merely unlikely, and fails closed.
    """
    n = len(provenance.consulted)
    return GateDecision(gate=SOURCES, passed=n > 0, threshold=1.0, observed=float(n),
                        detail=(f"{n} consulted document(s): {', '.join(provenance.consulted)}"
                                if n else "no document was read for this answer"))
