"""How an evidence sentence is scored: its passage's relevance times how well it answers.

Every sentence of a reranked passage becomes evidence; its score orders what the
extractive generator cites. The score is the passage's calibrated relevance ``p`` times a
factor in [0.5, 1] that says how well this sentence, rather than its neighbours, answers
the question. Two rules exist, and a run records which one it used (replay recomputes
with that one):

- ``overlap-1`` (every run recorded before sentence rules were named):
  ``0.5 + 0.5 * overlap``, with ``overlap`` the share of the question's content words the
  sentence and its heading path carry. A neighbouring sentence that repeats the
  question's words but not its answer wins over the one that answers.
- ``meaning-1``: ``0.5 + 0.5 * sigmoid(b + w_o * overlap + w_c * cosine)``, with
  ``cosine`` the e5 similarity of the question (``query:``) and the sentence with its
  section headings (``passage:``). The weights are a logistic fit of "is this the gold
  sentence" on public fit halves (XQuAD de/en by article, CLAPnq by question), reported on
  the held-out halves: ``eval/fit_sentence_rule.py``; figures in docs/evaluation.md,
  "Choosing the answer sentence".

A model reads only the sentences that could still be cited first: those of passages whose
relevance is at least half the best passage's (below that, even the lowest factor of a
best-passage sentence outranks them), at most ``READ_AT_MOST`` of them (``READ_CHARS``
characters each), and only when the gates let the run generate (a refused run cites
nothing). The others keep the floor factor 0.5 and no cosine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from stichtag.domain.quantities import content_words

OVERLAP_RULE = "overlap-1"
MEANING_RULE = "meaning-1"
FLOOR = 0.5  # the factor's lower end: a sentence keeps at least half its passage's score
READ_SHARE = 0.5  # passages below this share of the best are not read by the model
# At most this many sentences are embedded per answer (the first, in evidence order: best
# passages first). Law passages hold long sentences; reading every sentence of eight near
# passages cost ~0.7 s per answer at p50 on the loaded 2-core machine, eight of them still
# ~0.9 s at p95 (docs/benchmarks.md, "Answer stages on the law corpus").
READ_AT_MOST = 4
# ... and each is read up to this many characters (law sentences run to several hundred;
# the fit's XQuAD and CLAPnq sentences mostly stay below it)
READ_CHARS = 300


@dataclass(frozen=True, kw_only=True, slots=True)
class SentenceRule:
    """A named way of turning a sentence's features into its factor."""

    rule_id: str
    bias: float = 0.0
    w_overlap: float = 0.0
    w_cosine: float = 0.0
    w_cross: float = 0.0

    @property
    def reads_meaning(self) -> bool:
        """Whether the rule needs the sentence's cosine to the question."""
        return self.rule_id != OVERLAP_RULE

    @property
    def reads_cross(self) -> bool:
        """Whether the rule also needs the cross-encoder's logit of question and sentence."""
        return self.w_cross != 0.0

    def factor(self, overlap: float, cosine: float | None,
               logit: float | None = None) -> float:
        """The sentence's factor in [0.5, 1]; a sentence the models did not read (or a
        NaN value) gets the floor."""
        if not self.reads_meaning:
            return FLOOR + (1 - FLOOR) * overlap
        if cosine is None or math.isnan(cosine):
            return FLOOR
        z = self.bias + self.w_overlap * overlap + self.w_cosine * cosine
        if self.reads_cross:
            if logit is None or math.isnan(logit):
                return FLOOR
            z += self.w_cross * logit
        return FLOOR + (1 - FLOOR) / (1 + math.exp(-z))


# Fitted by eval/fit_sentence_rule.py on the fit halves (see docs/evaluation.md,
# "Choosing the answer sentence"); any change of weights or features is a new id.
RULES: dict[str, SentenceRule] = {
    OVERLAP_RULE: SentenceRule(rule_id=OVERLAP_RULE),
    MEANING_RULE: SentenceRule(rule_id=MEANING_RULE, bias=-19.0666, w_overlap=2.8214,
                               w_cosine=21.0223),
}
DEFAULT_RULE = MEANING_RULE


def rule(rule_id: str) -> SentenceRule:
    """The rule named ``rule_id``; an unknown id is an error, never a silent default."""
    try:
        return RULES[rule_id]
    except KeyError:
        raise ValueError(f"unknown sentence rule {rule_id!r}; known: "
                         f"{', '.join(sorted(RULES))}") from None


def overlap_share(question: str, quote: str, heading_path: Sequence[str]) -> float:
    """The share of the question's distinct content words that the sentence or its
    heading path carries (0 when the question has none)."""
    terms = set(content_words(question))
    if not terms:
        return 0.0
    words = set(content_words(quote)) | set(content_words(" ".join(heading_path)))
    return len(terms & words) / len(terms)


def read_by_model(passage_scores: Sequence[float]) -> list[bool]:
    """Which passages' sentences the model reads: relevance at least ``READ_SHARE`` of
    the best (NaN never counts)."""
    finite = [s for s in passage_scores if not math.isnan(s)]
    if not finite:
        return [False] * len(passage_scores)
    best = max(finite)
    return [not math.isnan(s) and s >= READ_SHARE * best for s in passage_scores]
