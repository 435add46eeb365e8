"""Pairs for the cross-encoder student: the law question set's fit half and XQuAD across languages.

The student (docs/models.md, "The student cross-encoder") scores every answer, so it must
judge the questions users ask, in both languages, against the law as it is cut at ingest:

* **Law question set, fit half** (``eval/law_questions/fit.jsonl``, docs/evaluation.md):
  every answerable item gives its question (German or English) with the passage of its
  gold version that holds the gold text (positive), and negatives from *other* sections
  of that version — the nearest one and a random one — never from the same section (any
  passage of a section may answer a question about it). Off-corpus items give negatives
  only. Items whose answer depends on the date alone (not in force at the Stichtag) are
  left out: the text answers them, the as-of pair does not, and that is the store's
  judgement, not the model's. A negative passage must itself lie in a fit-half section,
  so nothing of a test-half section is ever seen, not even as a negative.
* **XQuAD across languages**: the parallel German and English articles (same question
  ids) give English questions with German passages and the reverse, with the labels of
  the passage side's own split (``data.xquad_questions``, held-out articles excluded).

Seeded by hashes of ids, so the pairs are a function of the files.
"""

from __future__ import annotations

import hashlib
import json
import random
from functools import lru_cache
from pathlib import Path

from stichtag.domain.text import normalize
from stichtag.training.data import (
    _SECTION,
    SHARED,
    Pair,
    Split,
    passages_of,
    xquad_questions,
    xquad_rows,
)

LAW_CORPUS = "corpus/de-insurance-law"


def law_side(key: str) -> str:
    """``fit`` or ``test`` for a section key like ``vag2016:§7``: the law question set's rule.

    The same function splits the set itself (``eval/law_questions/generate.py``), so a
    section is on one side for the questions and for the training pairs alike.
    """
    digest = hashlib.sha256(("split:" + key).encode()).digest()[:8]
    return "fit" if int.from_bytes(digest, "big") % 2 == 0 else "test"


@lru_cache(maxsize=64)
def _version_passages(path: Path) -> tuple[tuple[str, str], ...]:
    """(section number or "", passage body) of one version file, in document order."""
    media = "text/markdown" if path.suffix == ".md" else "text/plain"
    out = []
    for body, section in passages_of(path.read_text(encoding="utf-8"), media):
        match = _SECTION.match(section[-1].strip()) if section else None
        out.append((match.group(1) if match else "", body))
    return tuple(out)


def _squash(text: str) -> str:
    return " ".join(normalize(text).split())


def law_question_pairs(path: Path, *, shared: Path = SHARED,
                       split: str = "fit") -> tuple[list[Pair], int]:
    """Pairs from one law question file; returns them and how many items were skipped."""
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    pairs: list[Pair] = []
    skipped = 0
    fallback = sorted({i["gold"]["version_file"] for i in items if i.get("gold")})
    for item in items:
        if item.get("split") != split:
            raise ValueError(f"{path}: item {item['id']} is on the {item.get('split')} side")
        law = str(item["section"]).split(":")[0]
        rng = random.Random(hashlib.sha256(item["id"].encode()).hexdigest())  # noqa: S311
        if item["answerable"] and item.get("gold"):
            version = shared / LAW_CORPUS / item["gold"]["version_file"]
            rows = _version_passages(version)
            gold = _squash(item["gold"]["gold_text"])
            hit = [i for i, (_, body) in enumerate(rows) if gold in _squash(body)]
            if not hit:
                skipped += 1
                continue
            at = hit[0]
            own = rows[at][0]
            others = [i for i, (number, _) in enumerate(rows)
                      if number and number != own and law_side(f"{law}:§{number}") == "fit"
                      and gold not in _squash(rows[i][1])]
            near = sorted(others, key=lambda i: (abs(i - at), i))[:1]
            far = [i for i in others if i not in near]
            chosen = near + rng.sample(far, min(1, len(far)))
            pairs.append(Pair(question=item["question"], passage=rows[at][1], label=1,
                              source=f"law-questions-{item['lang']}", group=item["id"]))
            pairs.extend(Pair(question=item["question"], passage=rows[i][1], label=0,
                              source=f"law-questions-{item['lang']}", group=item["id"])
                         for i in chosen)
        elif item["category"] == "off-corpus":
            rows = _version_passages(shared / LAW_CORPUS / rng.choice(fallback))
            pool = [i for i, (number, _) in enumerate(rows)
                    if number and law_side(f"{law}:§{number}") == "fit"]
            pairs.extend(Pair(question=item["question"], passage=rows[i][1], label=0,
                              source=f"law-questions-{item['lang']}", group=item["id"])
                         for i in rng.sample(pool, min(2, len(pool))))
    return pairs, skipped


def xquad_cross_pairs(split: Split, *, negatives: int = 2, shared: Path = SHARED) -> list[Pair]:
    """English questions over German passages and German questions over English ones."""
    pairs: list[Pair] = []
    for q_lang, p_lang in (("en", "de"), ("de", "en")):
        asked = {q.qid.split("-", 2)[2]: q.question
                 for q in xquad_questions(q_lang, split, shared)}
        for q in xquad_questions(p_lang, split, shared):
            raw = q.qid.split("-", 2)[2]
            if raw not in asked:
                continue  # the question's own language lost its clean positive
            group = f"xquad-{q_lang}x{p_lang}-{raw}"
            rng = random.Random(hashlib.sha256(group.encode()).hexdigest())  # noqa: S311
            for i in xquad_rows(q, rng, negatives):
                pairs.append(Pair(question=asked[raw], passage=q.passages[i],
                                  label=int(q.positive[i]), source=f"xquad-{q_lang}x{p_lang}",
                                  group=group))
    return pairs
