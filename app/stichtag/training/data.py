"""Training and evaluation pairs for the reranker, read in place from ``shared/``.

Every set is split so that evaluation material is never trained on:

* **XQuAD** de + en (CC BY-SA 4.0): split by article. The held-out articles are the
  ``XQUAD_HELD_OUT`` (12 of 48) with the smallest sha256 of their title, fixed here and
  in docs/models.md. Paragraphs are cut into passages by the server's own segmenter
  (``stichtag.domain.prepared``, <= 600 characters), because that is what the reranker sees.
  Positive: the question with the passage holding its answer. Negatives: passages of
  the same paragraph that do not contain the answer (same topic, no answer: the case
  the cosine cannot tell), and passages of other paragraphs of the same article.
* **CLAPnq** (Apache-2.0): the calibration half of ``eval/clapnq_to_eval.py`` only
  (sha256 of the id, even = calibration), and no passage that a test-half question
  also uses. Answerable questions: passages with a selected sentence are positive, the
  rest negative; unanswerable questions: every passage of its document is negative.
* **German insurance law** (VVG 2008, VAG 2016, DeckRV; amtliche Werke, section 5 UrhG):
  the latest version of each law, cut into passages as at ingest. A question is written
  from a section heading by template; positive: the section's first passage; negatives:
  the nearest other section's first passage and random other sections of that law, for
  training drawn from training sections only. Split by section: sha256(law, section
  number) % 5 == 0 is held out.

All choices are seeded by hashes of ids, so the pair lists are a function of the files.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from stichtag.domain.passages import section_of
from stichtag.domain.prepared import prepare
from stichtag.domain.text import normalize

Split = Literal["train", "held-out"]
# app/stichtag/training/data.py -> the checkout -> its sibling shared/
SHARED = Path(__file__).resolve().parents[4] / "shared"
XQUAD_LICENSE = "CC BY-SA 4.0 (XQuAD, google-deepmind/xquad)"
CLAPNQ_LICENSE = "Apache-2.0 (CLAPnq, IBM)"
LAW_LICENSE = "German federal law: amtliche Werke, not protected (section 5 UrhG)"
LAWS = ("vvg2008", "vag2016", "deckrv")
LAW_NAMES = {"vvg2008": "VVG", "vag2016": "VAG", "deckrv": "DeckRV"}
XQUAD_HELD_OUT_COUNT = 12
# questions from a heading; {t} is the heading's title without its section number
LAW_TEMPLATES = (
    "Was regelt das {law} zu {t}?",
    "Welche Vorschrift gilt für {t}?",
    "Was sagt das Gesetz über {t}?",
    "Welche Regelungen gibt es zu {t}?",
    "{t}: was ist zu beachten?",
    "Was gilt nach dem {law} für {t}?",
)
_SECTION = re.compile("^§\\s*(\\d+[a-z]*)\\s*[-\u2013]?\\s*(.*)$")  # hyphen or en dash


@dataclass(frozen=True, kw_only=True)
class Pair:
    """One labelled (question, passage) pair; ``group`` is the question's id."""

    question: str
    passage: str
    label: int
    source: str
    group: str


@dataclass(frozen=True, kw_only=True)
class DataSource:
    """Provenance of a data set as it goes into a manifest."""

    name: str
    license: str
    files: dict[str, str]
    """Path relative to ``shared/`` (or as given) -> sha256."""
    pairs: int


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of one input file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rel(path: Path, shared: Path) -> str:
    try:
        return str(path.relative_to(shared))
    except ValueError:
        return str(path)


def passages_of(text: str, media_type: str = "text/plain") -> list[tuple[str, tuple[str, ...]]]:
    """The server's passages of a document: (body text, section heading path)."""
    norm = normalize(text)
    version = prepare(norm, media_type)
    return [(norm[p.start : p.end], section_of(p.heading_path)) for p in version.passages]


def pairs_hash(pairs: Sequence[Pair]) -> str:
    """sha256 over the canonical JSON lines of the pairs, in order."""
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(json.dumps(asdict(pair), sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


# --------------------------------------------------------------------------- XQuAD


def xquad_held_out(shared: Path = SHARED) -> list[str]:
    """The held-out article titles: the 12 with the smallest sha256(title)."""
    data = json.loads((shared / "eval/xquad/xquad.en.json").read_text(encoding="utf-8"))
    titles = [article["title"] for article in data["data"]]
    return sorted(sorted(titles, key=_sha)[:XQUAD_HELD_OUT_COUNT])


@dataclass(frozen=True, kw_only=True)
class XquadQuestion:
    """A question with every passage of its article and which of them hold the answer."""

    qid: str
    question: str
    passages: list[str]
    positive: list[bool]
    same_paragraph: list[bool]


def xquad_questions(lang: str, split: Split, shared: Path = SHARED) -> list[XquadQuestion]:
    """Questions of ``lang`` ('de' or 'en') from the train or held-out articles."""
    data = json.loads((shared / f"eval/xquad/xquad.{lang}.json").read_text(encoding="utf-8"))
    held = set(xquad_held_out(shared))
    out: list[XquadQuestion] = []
    for article in data["data"]:
        if (article["title"] in held) != (split == "held-out"):
            continue
        chunks: list[tuple[int, str]] = []
        for pi, paragraph in enumerate(article["paragraphs"]):
            chunks.extend((pi, body) for body, _ in passages_of(paragraph["context"]))
        for pi, paragraph in enumerate(article["paragraphs"]):
            for qa in paragraph["qas"]:
                answers = {normalize(a["text"]).strip() for a in qa["answers"]}
                answers.discard("")
                pos = [p == pi and any(a in body for a in answers) for p, body in chunks]
                if not any(pos):
                    continue  # the answer was cut across two passages: no clean positive
                # a passage elsewhere that also holds the answer text is neither side
                mention = [any(a in body for a in answers) for _, body in chunks]
                keep = [i for i in range(len(chunks)) if pos[i] or not mention[i]]
                out.append(
                    XquadQuestion(
                        qid=f"xquad-{lang}-{qa['id']}",
                        question=qa["question"].strip(),
                        passages=[chunks[i][1] for i in keep],
                        positive=[pos[i] for i in keep],
                        same_paragraph=[chunks[i][0] == pi for i in keep],
                    )
                )
    return out


def xquad_pairs(
    lang: str, split: Split, *, negatives: int = 3, shared: Path = SHARED
) -> list[Pair]:
    """Positive(s) plus up to one same-paragraph and the rest other-paragraph negatives."""
    pairs: list[Pair] = []
    for q in xquad_questions(lang, split, shared):
        rng = random.Random(_sha(q.qid))  # noqa: S311 - seeded sampling, not security
        for i in xquad_rows(q, rng, negatives):
            pairs.append(
                Pair(question=q.question, passage=q.passages[i], label=int(q.positive[i]),
                     source=f"xquad-{lang}", group=q.qid)
            )
    return pairs


def xquad_rows(q: XquadQuestion, rng: random.Random, negatives: int) -> list[int]:
    """The passages a question is paired with: its positives, then up to one
    same-paragraph negative and other-paragraph negatives up to ``negatives``."""
    idx = range(len(q.passages))
    same = [i for i in idx if not q.positive[i] and q.same_paragraph[i]]
    other = [i for i in idx if not q.positive[i] and not q.same_paragraph[i]]
    chosen = rng.sample(same, min(1, len(same)))
    chosen += rng.sample(other, min(negatives - len(chosen), len(other)))
    return [i for i in idx if q.positive[i]] + chosen


# --------------------------------------------------------------------------- CLAPnq


@dataclass(frozen=True, kw_only=True)
class ClapnqQuestion:
    """A CLAPnq question, its half (0 calibration, 1 test) and its document's passages."""

    qid: str
    question: str
    answerable: bool
    half: int
    document: str
    passages: list[str]
    positive: list[bool]


def clapnq_questions(shared: Path = SHARED) -> list[ClapnqQuestion]:
    """All 600 questions with the split of ``eval/clapnq_to_eval.py``."""
    out: list[ClapnqQuestion] = []
    for name, answerable in (("clapnq_dev_answerable.jsonl", True),
                             ("clapnq_dev_unanswerable.jsonl", False)):
        lines = (shared / "eval/clapnq" / name).read_text(encoding="utf-8").splitlines()
        for line in lines:
            item = json.loads(line)
            (p,) = item["passages"]
            document = f"{p['title']}\n\n{p['text'].strip()}\n"
            selected = (item.get("output") or [{}])[0].get("selected_sentences") or []
            if answerable and not selected:
                continue  # the eval drops these too (no gold)
            bodies = [body for body, _ in passages_of(document)]
            keys = [normalize(s).strip()[:40] for s in selected]
            pos = [answerable and any(k and k in b for k in keys) for b in bodies]
            half = int(hashlib.sha256(item["id"].encode()).hexdigest(), 16) % 2
            out.append(ClapnqQuestion(qid=f"clapnq-{item['id']}", question=item["input"],
                                      answerable=answerable, half=half, document=document,
                                      passages=bodies, positive=pos))
    return out


def clapnq_pairs(shared: Path = SHARED) -> list[Pair]:
    """Calibration-half pairs; documents also used by a test-half question are left out."""
    questions = clapnq_questions(shared)
    test_docs = {q.document for q in questions if q.half == 1}
    # documents of different questions can share a passage: drop those too
    test_passages = {b for q in questions if q.half == 1 for b in q.passages}
    pairs: list[Pair] = []
    for q in questions:
        if q.half != 0 or q.document in test_docs:
            continue
        if q.answerable and not any(q.positive):
            continue  # gold sentence cut across passages: no clean label
        for body, pos in zip(q.passages, q.positive, strict=True):
            if body not in test_passages:
                pairs.append(Pair(question=q.question, passage=body, label=int(pos),
                                  source="clapnq", group=q.qid))
    return pairs


class Retriever(Protocol):
    """What mining needs of an embedder (``stichtag.models.embedder.OnnxEmbedder``)."""

    model_hash: str

    def embed_queries(self, texts: Sequence[str]) -> Any: ...

    def embed_passages(self, texts: Sequence[str]) -> Any: ...


def clapnq_retrieved_pairs(retriever: Retriever, *, k: int = 8,
                           shared: Path = SHARED) -> list[Pair]:
    """Calibration-half questions against the ``k`` passages retrieval hands the reranker.

    ``clapnq_pairs`` pairs a question with its own document only. At answer time the
    candidates are the e5 top-k over the whole corpus: passages of other documents on the
    same subject, which an unanswerable question's best candidate usually is. These pairs
    take that distribution from the calibration half: the corpus is every CLAPnq passage
    that no test-half question uses, a candidate is positive when it holds a selected
    sentence of an answerable question, else negative.
    """
    questions = clapnq_questions(shared)
    test_passages = {b for q in questions if q.half == 1 for b in q.passages}
    corpus = sorted({b for q in questions for b in q.passages} - test_passages)
    test_docs = {q.document for q in questions if q.half == 1}
    train = [q for q in questions if q.half == 0 and q.document not in test_docs
             and not (q.answerable and not any(q.positive))]
    if not corpus or not train:
        return []
    vectors = np.asarray(retriever.embed_passages(corpus), dtype=np.float32)
    queries = np.asarray(retriever.embed_queries([q.question for q in train]),
                         dtype=np.float32)
    pairs: list[Pair] = []
    for q, qvec in zip(train, queries, strict=True):
        gold = {b for b, pos in zip(q.passages, q.positive, strict=True) if pos}
        for i in np.argsort(-(vectors @ qvec), kind="stable")[:k]:
            body = corpus[int(i)]
            pairs.append(Pair(question=q.question, passage=body, label=int(body in gold),
                              source="clapnq-retrieved", group=q.qid))
    return pairs


def merge_pairs(first: Sequence[Pair], second: Sequence[Pair]) -> list[Pair]:
    """``first``, then the pairs of ``second`` whose (question, passage) is new."""
    seen = {(p.question, p.passage) for p in first}
    return [*first, *(p for p in second if (p.question, p.passage) not in seen)]


# --------------------------------------------------------------------------- law


def latest_law_file(law: str, shared: Path = SHARED) -> Path:
    """The newest version file of one law (file names start with the date)."""
    return sorted((shared / "corpus/de-insurance-law" / law).iterdir())[-1]


@dataclass(frozen=True, kw_only=True)
class LawSection:
    """One section (Paragraph) of a law: number, title, its passages."""

    law: str
    number: str
    title: str
    passages: list[str]

    @property
    def held_out(self) -> bool:
        """Whether this section belongs to the held-out fifth."""
        return int(_sha(f"{self.law}|{self.number}"), 16) % 5 == 0


def law_sections(law: str, shared: Path = SHARED) -> list[LawSection]:
    """Sections with a real title (not "weggefallen"), in document order."""
    path = latest_law_file(law, shared)
    media = "text/markdown" if path.suffix == ".md" else "text/plain"
    grouped: dict[tuple[str, ...], list[str]] = {}
    for body, section in passages_of(path.read_text(encoding="utf-8"), media):
        if section:
            grouped.setdefault(section, []).append(body)
    out: list[LawSection] = []
    for section, bodies in grouped.items():
        match = _SECTION.match(section[-1].strip())
        if match is None:
            continue
        title = match.group(2).strip(" .")
        if not title or "weggefallen" in title.lower() or len(title) < 4:
            continue
        out.append(LawSection(law=law, number=match.group(1), title=title, passages=bodies))
    return out


def law_question(section: LawSection) -> str:
    """A templated German question from the section title (template chosen by hash)."""
    key = int(_sha(f"q|{section.law}|{section.number}"), 16)
    template = LAW_TEMPLATES[key % len(LAW_TEMPLATES)]
    return template.format(law=LAW_NAMES[section.law], t=section.title)


def law_pairs(split: Split, *, negatives: int = 3, shared: Path = SHARED) -> list[Pair]:
    """Question -> first passage (positive), neighbours and random sections (negatives)."""
    pairs: list[Pair] = []
    for law in LAWS:
        sections = law_sections(law, shared)
        # training negatives come from training sections only: a held-out section's
        # passage must not be seen in training, not even as a negative
        pool = [j for j, s in enumerate(sections) if split == "held-out" or not s.held_out]
        for i, section in enumerate(sections):
            if section.held_out != (split == "held-out"):
                continue
            rng = random.Random(_sha(f"n|{law}|{section.number}"))  # noqa: S311
            others = [j for j in pool if j != i]
            near = sorted(others, key=lambda j: (abs(j - i), j))[:1]  # the neighbour
            far = [j for j in others if j not in near]
            chosen = near + rng.sample(far, min(negatives - 1, len(far)))
            group = f"law-{law}-{section.number}"
            question = law_question(section)
            pairs.append(Pair(question=question, passage=section.passages[0], label=1,
                              source="law", group=group))
            for j in chosen:
                pairs.append(Pair(question=question, passage=sections[j].passages[0], label=0,
                                  source="law", group=group))
    return pairs


# --------------------------------------------------------------------------- extra labels


def label_pairs(path: Path) -> list[Pair]:
    """Extra JSONL rows ``{"question", "passage", "label"}`` (label 0/1 or true/false)."""
    pairs: list[Pair] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        label = row["label"]
        if label not in (0, 1, True, False):
            raise ValueError(f"{path}:{n}: label must be 0/1 or a boolean")
        pairs.append(Pair(question=str(row["question"]), passage=str(row["passage"]),
                          label=int(label), source="labels", group=f"labels-{n}"))
    return pairs


# --------------------------------------------------------------------------- assembly


def training_pairs(
    *, shared: Path = SHARED, labels: Path | None = None, retriever: Retriever | None = None,
    retrieved_k: int = 8, clapnq_repeat: int = 1, law_templates: bool = True,
) -> tuple[list[Pair], list[DataSource]]:
    """Every training pair (train splits only) and the provenance of each source.

    With ``retriever`` the CLAPnq questions are also paired with their retrieved
    candidates (``clapnq_retrieved_pairs``); ``clapnq_repeat`` lists the CLAPnq pairs
    that many times (a weight: they are the English long-answer case and few).
    ``law_templates=False`` leaves out the heading-template law pairs (the student trains
    on the law question set's fit half instead, split by its own rule).
    """
    if clapnq_repeat < 1:
        raise ValueError("clapnq_repeat must be >= 1")

    def rel(path: Path) -> str:
        return _rel(path, shared)

    xq = [shared / "eval/xquad/xquad.de.json", shared / "eval/xquad/xquad.en.json"]
    cq = [shared / "eval/clapnq/clapnq_dev_answerable.jsonl",
          shared / "eval/clapnq/clapnq_dev_unanswerable.jsonl"]
    lw = [latest_law_file(law, shared) for law in LAWS]
    xquad = xquad_pairs("de", "train", shared=shared) + xquad_pairs("en", "train", shared=shared)
    clapnq = clapnq_pairs(shared)
    clapnq_name = "clapnq-calibration-half"
    if retriever is not None:
        clapnq = merge_pairs(clapnq, clapnq_retrieved_pairs(retriever, k=retrieved_k,
                                                            shared=shared))
        clapnq_name += f"+retrieved-top{retrieved_k}-by-{retriever.model_hash[:12]}"
    clapnq = clapnq * clapnq_repeat
    if clapnq_repeat > 1:
        clapnq_name += f"x{clapnq_repeat}"
    law = law_pairs("train", shared=shared) if law_templates else []
    sources = [
        DataSource(name="xquad-de-en-train", license=XQUAD_LICENSE,
                   files={rel(p): file_sha256(p) for p in xq}, pairs=len(xquad)),
        DataSource(name=clapnq_name, license=CLAPNQ_LICENSE,
                   files={rel(p): file_sha256(p) for p in cq}, pairs=len(clapnq)),
    ]
    if law:
        sources.append(DataSource(name="de-insurance-law-train-sections", license=LAW_LICENSE,
                                  files={rel(p): file_sha256(p) for p in lw}, pairs=len(law)))
    pairs = xquad + clapnq + law
    if labels is not None:
        extra = label_pairs(labels)
        sources.append(DataSource(name="labels", license="as supplied",
                                  files={str(labels): file_sha256(labels)}, pairs=len(extra)))
        pairs += extra
    return pairs, sources


def validation_pairs(*, shared: Path = SHARED, limit: int = 192) -> list[Pair]:
    """A fixed slice of held-out pairs (XQuAD-de articles and law sections) for logs."""
    pool = xquad_pairs("de", "held-out", shared=shared) + law_pairs("held-out", shared=shared)
    rng = random.Random(0)  # noqa: S311 - a fixed sample, not security
    return rng.sample(pool, min(limit, len(pool)))


def sources_json(sources: Iterable[DataSource]) -> list[dict[str, Any]]:
    """Provenance as plain JSON for manifests and logs."""
    return [asdict(s) for s in sources]
