"""The default generator: the answer is the best evidence sentences, each citing itself.

Deterministic and model-free, so replay can regenerate it exactly: the same question and
evidence (in any order) give the same draft. It cannot paraphrase, so coverage is 1 by
construction. Given the question's salient aspects it picks sentences that cover them
(greedy covering, ``stichtag.domain.scope.select_covering``), not only high-scoring ones; what
stays uncovered becomes the answer's gaps, decided by the pipeline from the citations.
When the evidence was scored by meaning (``Evidence.answers``; docs/evaluation.md,
"Choosing the answer sentence"), the best-scored sentence comes first and covering only
fills in what it leaves out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from stichtag.domain.answer import Draft, DraftSentence, Evidence
from stichtag.domain.aspect_support import support
from stichtag.domain.generation import Generation
from stichtag.domain.quantities import content_words, fold
from stichtag.domain.salience import Aspect
from stichtag.domain.scope import evidence_text, select_covering

DEFAULT_MAX_SENTENCES = 3
GAP_PREFIX = "no evidence for: "
# German inflection endings stripped before matching, so "Höchstrechnungszinses" covers
# "Höchstrechnungszins"; stems stay at least this long so short words are not mangled.
_SUFFIXES = ("en", "er", "es", "e", "n", "s")
_MIN_STEM = 4


def _stem(word: str) -> str:
    folded = fold(word)
    for suffix in _SUFFIXES:
        if folded.endswith(suffix) and len(folded) - len(suffix) >= _MIN_STEM:
            return folded[: -len(suffix)]
    return folded


def _rank_key(ev: Evidence) -> tuple[float, str, str, int, str]:
    """Best score first, then document order; NaN ranks last instead of breaking sorting."""
    score = ev.score if not math.isnan(ev.score) else -math.inf
    return (-score, ev.document, ev.version_id, ev.start, ev.eid)


class ExtractiveGenerator:
    """Picks at most ``max_sentences`` evidence sentences, deduplicated by quote."""

    name = "extractive"
    deterministic = True

    def __init__(self, max_sentences: int = DEFAULT_MAX_SENTENCES) -> None:
        """``max_sentences`` bounds the answer length (at least 1)."""
        if max_sentences < 1:
            raise ValueError("max_sentences must be at least 1")
        self.max_sentences = max_sentences

    def select(self, evidence: Sequence[Evidence]) -> list[Evidence]:
        """The evidence sentences the answer consists of, best first."""
        chosen: list[Evidence] = []
        quotes: set[str] = set()
        for ev in sorted(evidence, key=_rank_key):
            if len(chosen) == self.max_sentences:
                break
            if not ev.quote.strip() or ev.quote in quotes:
                continue
            quotes.add(ev.quote)
            chosen.append(ev)
        return chosen

    def answer_first(self, aspects: Sequence[Aspect],
                     evidence: Sequence[Evidence]) -> list[Evidence]:
        """The best-scored sentence first (its score says how well it answers, by
        meaning: stichtag.domain.sentence_rule), then sentences scored near it that
        cover the salient aspects it leaves uncovered. Covering alone would put the
        sentence that repeats the question's words before the one that answers it."""
        first = self.select(evidence)[:1]
        if not first:
            return []
        done = set(support(aspects, [evidence_text(first[0])]).covered)
        rest = [a for a in aspects if a not in done]
        # every other sentence may fill in: restricted to sentences scored near the
        # first, an aspect the answering provision states one passage further on (the
        # law question set's "Lebensversicherung" of a Widerruf) became a false gap
        others = [ev for ev in evidence if ev.quote != first[0].quote]
        if not rest or not others or self.max_sentences == 1:
            return first
        more = select_covering(rest, others, self.max_sentences - 1)
        return first + [ev for ev in more if support(rest, [evidence_text(ev)]).covered]

    def generate(self, question: str, evidence: Sequence[Evidence],
                 aspects: Sequence[Aspect] = ()) -> Draft:
        """Each answer sentence is one selected evidence sentence citing exactly itself:
        when the salient aspects are given, the sentence that answers best and sentences
        covering what it leaves out (evidence scored by word overlap alone: covering
        only), else the best ones."""
        if aspects and any(ev.answers is not None for ev in evidence):
            chosen = self.answer_first(aspects, evidence)
        elif aspects:  # scored by word overlap alone (runs recorded before the rule)
            chosen = select_covering(aspects, evidence, self.max_sentences)
        else:
            chosen = self.select(evidence)
        chosen = sorted(chosen, key=_rank_key)  # best first, whichever way they were picked
        sentences = [DraftSentence(text=ev.quote, evidence_ids=[ev.eid]) for ev in chosen]
        gaps = [] if aspects else gaps_for(question, chosen)
        # What it read is not its to say: the pipeline derives it from the citations (the
        # documents of the chosen sentences), stichtag.domain.provenance.
        return Draft(sentences=sentences, gaps=gaps)

    def run(self, question: str, evidence: Sequence[Evidence],
            aspects: Sequence[Aspect] = ()) -> Generation:
        """The draft; there are no exchanges to record for a local generator."""
        return Generation(draft=self.generate(question, evidence, aspects))


def gaps_for(question: str, chosen: Sequence[Evidence]) -> list[str]:
    """One gap per question term that no chosen sentence (or its heading path) mentions.

    Terms are the question's content words (stopwords and numbers removed: dates in a
    question are the as-of pair's business). A term is covered when its stem occurs in
    a word of the chosen text, so compounds count ("Neugeschäft" in
    "Neugeschäftsbeitrag"); stems shorter than four letters must match a whole word.
    """
    words = {fold(w) for ev in chosen
             for w in content_words(" ".join((*ev.heading_path, ev.quote)))}
    gaps: list[str] = []
    seen: set[str] = set()
    for term in content_words(question):
        stem = _stem(term)
        if stem in seen:
            continue
        seen.add(stem)
        covered = stem in words if len(stem) < _MIN_STEM else any(stem in w for w in words)
        if not covered:
            gaps.append(GAP_PREFIX + term)
    return gaps
