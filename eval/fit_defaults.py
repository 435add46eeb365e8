"""Fit the built-in thresholds (version 0) on public labelled data, read in place.

    python eval/fit_defaults.py DATA_DIR [--write] [--report report.json]

DATA_DIR holds the embedded PostgreSQL, indexes and models of this run (kept, so a second
run reuses the embedded corpora). Every question is assessed by the real pipeline
(``AnswerService.relevance``: retrieval, the default reranker, salience and scope at the
item's as-of pair), exactly as the gates see it on a fresh tenant. Three sources:

- **law**: the shared German insurance law corpus (manifest replayed with its tx times)
  with the sets of eval/ (as-of answerable/unanswerable, out of scope, not yet in force);
  the even-numbered items (by position in each file) fit, the odd ones are held out;
- **clapnq**: the calibration half of eval/clapnq_to_eval.py (the test half is never read);
- **xquad-de**, **xquad-en**: every paragraph is a document; a question is answerable at
  a Stichtag where all paragraphs are in force, and unanswerable at its paragraph's own
  slot, where exactly that paragraph is not (the rest of its article stays). The 12
  articles with the smallest sha256 of their title are held out (as app/stichtag/training does).

The fit, for each θ_scope on a grid (0, 0.05, ..., 0.6): the relevance model is fitted on
the fitting items that pass the scope gate, each source weighted equally, and θ_rel is
the lowest threshold at which, pooled with equal source weights, at least ``--refusal`` of
the unanswerable fitting items are refused (by either gate); the strictest θ_scope whose
weighted delivery of answerable fitting items is within 1 point of the best wins.
``--write`` rewrites app/stichtag/services/defaults.py with the values, the rationale and the data
hashes.
``--from-report`` refits from the scored items of an earlier ``--report`` (no database).
Deterministic for the same data, models and code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO))

from stichtag.bootstrap import Services, bootstrap  # noqa: E402
from stichtag.cli.manifest import ingest_manifest  # noqa: E402
from stichtag.config import Settings  # noqa: E402
from stichtag.domain.calibration import roc_auc  # noqa: E402
from stichtag.domain.errors import NotFound  # noqa: E402
from stichtag.domain.relevance import (  # noqa: E402
    FEATURES,
    LEXICAL_FEATURES,
    NO_LOGIT,
    RelevanceModel,
    fit_relevance,
)
from stichtag.domain.timeutil import parse_time  # noqa: E402
from stichtag.services.access import Principal  # noqa: E402
from stichtag.services.calibrate import SCOPE_GRID, SCOPE_SLACK, scope_share  # noqa: E402
from stichtag.services.documents import IngestRequest  # noqa: E402

LAW = SHARED / "corpus" / "de-insurance-law"
LAW_SETS = ("asof_de_insurance.jsonl", "out_of_scope_de.jsonl", "not_yet_in_force_de.jsonl")
XQUAD_HELD_OUT = 12
SLOT0 = datetime(2000, 1, 1, tzinfo=UTC)
EMPTY = {"rerank": -1.0, "matched": 0.0, "coverage": 0.0, "numbers": 0.0, "cross": NO_LOGIT}
LAW_QUESTIONS = REPO / "eval" / "law_questions"



@dataclass(frozen=True, kw_only=True)
class Item:
    """One labelled question at one as-of pair."""

    source: str
    id: str
    question: str
    valid_at: datetime
    known_at: datetime
    answerable: bool
    fit: bool


@dataclass(frozen=True, kw_only=True)
class Scored:
    """An item with what the gates saw."""

    item: Item
    features: dict[str, float]
    scope: float


def sha256(path: Path) -> str:
    """Hex digest of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tenant(svc: Services, name: str, *, zone: str = "UTC") -> tuple[Principal, bool]:
    """The operator of tenant ``name``; created (True) when it did not exist."""
    try:
        return svc.access.operator(name), False
    except NotFound:
        svc.access.create_tenant(name, zone)
        return svc.access.operator(name), True


# -- sources --------------------------------------------------------------------------------


def law_items(now: datetime) -> Iterator[Item]:
    """The eval/ sets over the law corpus; even positions fit, odd ones are held out."""
    for name in LAW_SETS:
        lines = (REPO / "eval" / name).read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            raw = json.loads(line)
            yield Item(source="law", id=raw["id"], question=raw["question"],
                       valid_at=parse_time(raw["valid_at"], field="valid_at")
                       if raw.get("valid_at") else now,
                       known_at=parse_time(raw["known_at"], field="known_at")
                       if raw.get("known_at") else now,
                       answerable=bool(raw["answerable"]), fit=i % 2 == 0)


def law_question_items(now: datetime) -> Iterator[Item]:
    """The law question set (eval/law_questions): the fit half fits, the test half is
    held out; split by law section, so no section is on both sides."""
    for half in ("fit", "test"):
        for line in (LAW_QUESTIONS / f"{half}.jsonl").read_text(encoding="utf-8").splitlines():
            raw = json.loads(line)
            yield Item(source="law-questions", id=raw["id"], question=raw["question"],
                       valid_at=parse_time(raw["valid_at"], field="valid_at")
                       if raw.get("valid_at") else now,
                       known_at=parse_time(raw["known_at"], field="known_at")
                       if raw.get("known_at") else now,
                       answerable=bool(raw["answerable"]), fit=half == "fit")


def load_law(svc: Services) -> Principal:
    """The law tenant, loaded once."""
    who, created = tenant(svc, "fit-law")
    if created:
        ingest_manifest(svc, who, LAW / "manifest.csv", use_tx_time=True)
    return who


def load_clapnq(svc: Services, work: Path, now: datetime) -> tuple[Principal, list[Item]]:
    """The CLAPnq corpus and its calibration half."""
    sys.path.insert(0, str(REPO / "eval"))
    from clapnq_to_eval import main as clapnq_to_eval  # noqa: PLC0415

    out = work / "clapnq"
    if not (out / "calibration.jsonl").is_file():
        clapnq_to_eval(out)
    who, created = tenant(svc, "fit-clapnq")
    if created:
        ingest_manifest(svc, who, out / "manifest.csv", use_tx_time=True)
    items = [Item(source="clapnq", id=raw["id"], question=raw["question"], valid_at=now,
                  known_at=now, answerable=raw["answerable"], fit=True)
             for raw in map(json.loads, (out / "calibration.jsonl").read_text(
                 encoding="utf-8").splitlines())]
    return who, items


def xquad_held_out() -> set[str]:
    """The held-out articles: the 12 smallest sha256(title) (as app/stichtag/training)."""
    data = json.loads((SHARED / "eval/xquad/xquad.en.json").read_text(encoding="utf-8"))
    titles = [a["title"] for a in data["data"]]
    return set(sorted(titles, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
               [:XQUAD_HELD_OUT])


def load_xquad(svc: Services, lang: str, now: datetime,
               share: float = 1.0) -> tuple[Principal, list[Item]]:
    """Paragraphs as documents with one slot each in which only that paragraph is absent;
    ``share`` < 1 keeps that share of the questions (by a hash of their id)."""
    data = json.loads((SHARED / f"eval/xquad/xquad.{lang}.json").read_text(encoding="utf-8"))
    who, created = tenant(svc, f"fit-xquad-{lang}")
    held = xquad_held_out()
    items: list[Item] = []
    index = 0
    for a, article in enumerate(data["data"]):
        for p, paragraph in enumerate(article["paragraphs"]):
            index += 1
            slot = SLOT0 + timedelta(days=index)
            key = f"a{a:02d}p{p:02d}"
            if created:
                text = paragraph["context"].strip() + "\n"
                svc.documents.ingest(who, key, IngestRequest(
                    text=text, media_type="text/plain", valid_from=SLOT0, valid_to=slot,
                    title=article["title"].replace("_", " "), confidentiality="public"))
                svc.documents.ingest(who, key, IngestRequest(
                    text=text, media_type="text/plain", valid_from=slot + timedelta(days=1),
                    title=article["title"].replace("_", " "), confidentiality="public"))
            for qa in paragraph["qas"]:
                if _hash_share(qa["id"]) >= share:
                    continue
                fit = article["title"] not in held
                for answerable, at in ((True, SLOT0 + timedelta(hours=12)),
                                       (False, slot + timedelta(hours=12))):
                    items.append(Item(source=f"xquad-{lang}", id=f"{qa['id']}:{answerable}",
                                      question=qa["question"], valid_at=at, known_at=now,
                                      answerable=answerable, fit=fit))
    return who, items


def _hash_share(key: str) -> float:
    """A number in [0, 1) fixed by ``key``: subsamples the same items on every run."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 16**8


# -- scoring and fitting --------------------------------------------------------------------


def score(svc: Services, who: Principal, items: Sequence[Item]) -> list[Scored]:
    """What the gates see for each item, on a fresh tenant's pipeline."""
    assert svc.answers is not None
    out = []
    for n, item in enumerate(items, start=1):
        assessment, _ = svc.answers.relevance(who, item.question, valid_at=item.valid_at,
                                              known_at=item.known_at)
        out.append(Scored(item=item, features=assessment.pooled or EMPTY,
                          scope=scope_share(assessment)))
        if n % 200 == 0:
            print(f"  {item.source}: {n}/{len(items)}", file=sys.stderr, flush=True)
    return out


def source_weights(rows: Sequence[Scored]) -> list[float]:
    """Weights that give every source (and within it each class) equal total weight."""
    counts: dict[tuple[str, bool], int] = defaultdict(int)
    for r in rows:
        counts[(r.item.source, r.item.answerable)] += 1
    sources = {s for s, _ in counts}
    return [1.0 / (len(sources) * 2 * counts[(r.item.source, r.item.answerable)])
            for r in rows]


@dataclass(frozen=True, kw_only=True)
class Fit:
    """One candidate of the grid."""

    theta_scope: float
    theta_rel: float
    model: RelevanceModel
    delivery: float


def fit_at(fitting: Sequence[Scored], theta_scope: float, refusal: float,
           cross_encoder: str | None = None) -> Fit:
    """The relevance model and θ_rel for one scope threshold, and the delivery they give;
    with ``cross_encoder`` the model also reads its logits (``cross``)."""
    passing = [r for r in fitting if r.scope >= theta_scope]
    weights = source_weights(passing)
    scale = len(passing) / math.fsum(weights)
    model = fit_relevance([r.features for r in passing], [r.item.answerable for r in passing],
                          weights=[w * scale for w in weights],
                          names=FEATURES if cross_encoder else LEXICAL_FEATURES,
                          cross_encoder=cross_encoder)
    probabilities = [model.apply(r.features) if r.scope >= theta_scope else 0.0
                     for r in fitting]
    theta_rel = theta_for_refusal(probabilities, fitting, refusal)
    weights = source_weights(fitting)
    delivered = math.fsum(w for p, r, w in zip(probabilities, fitting, weights, strict=True)
                          if r.item.answerable and p >= theta_rel)
    total = math.fsum(w for r, w in zip(fitting, weights, strict=True) if r.item.answerable)
    return Fit(theta_scope=theta_scope, theta_rel=theta_rel, model=model,
               delivery=delivered / total)


def theta_for_refusal(probabilities: Sequence[float], rows: Sequence[Scored],
                      refusal: float) -> float:
    """The lowest θ at which the weighted share of unanswerable rows refused >= refusal."""
    weights = source_weights(rows)
    negatives = [(p, w) for p, r, w in zip(probabilities, rows, weights, strict=True)
                 if not r.item.answerable]
    total = math.fsum(w for _, w in negatives)
    for theta in sorted({p for p, _ in negatives} | {1.0}):
        refused = math.fsum(w for p, w in negatives if p < theta)
        if refused / total >= refusal:
            return theta
    return 1.0


def evaluate(rows: Sequence[Scored], model: RelevanceModel, theta_rel: float,
             theta_scope: float) -> dict[str, dict[str, Any]]:
    """Per source and split: delivery on answerable, refusal on unanswerable, ROC AUC of
    the rerank score alone and of the combined score."""
    out: dict[str, dict[str, Any]] = {}
    groups: dict[str, list[Scored]] = defaultdict(list)
    for r in rows:
        groups[f"{r.item.source} {'fit' if r.item.fit else 'held-out'}"].append(r)
    for name, group in sorted(groups.items()):
        pos = [r for r in group if r.item.answerable]
        neg = [r for r in group if not r.item.answerable]

        def delivered(r: Scored) -> bool:
            return r.scope >= theta_scope and model.apply(r.features) >= theta_rel

        entry: dict[str, Any] = {
            "answerable": len(pos), "unanswerable": len(neg),
            "delivery": sum(map(delivered, pos)) / len(pos) if pos else None,
            "refusal": sum(not delivered(r) for r in neg) / len(neg) if neg else None,
        }
        if pos and neg:
            labels = [r.item.answerable for r in group]
            entry["auc_rerank"] = roc_auc([r.features["rerank"] for r in group], labels)
            entry["auc_combined"] = roc_auc([model.apply(r.features) for r in group], labels)
            if all("cross" in r.features for r in group):
                entry["auc_cross"] = roc_auc([r.features["cross"] for r in group], labels)
        out[name] = entry
    return out


def write_defaults(model: RelevanceModel, theta_rel: float, theta_scope: float,
                   rationale: str) -> None:
    """Rewrite app/stichtag/services/defaults.py."""
    body = f'''"""The built-in thresholds (version 0), which a fresh tenant answers with.

Written by ``eval/fit_defaults.py`` from public labelled data read in place; do not edit
by hand — rerun the script (docs/thresholds.md, "Built-in defaults").
"""

from __future__ import annotations

THETA_REL = {theta_rel!r}
TAU = 1.0
THETA_SCOPE = {theta_scope!r}
RELEVANCE: dict[str, object] = {json.dumps(model.to_dict(), indent=4)}
RATIONALE = (
{chr(10).join(f"    {json.dumps(line, ensure_ascii=False)}" for line in _wrap(rationale))})
'''
    (REPO / "app" / "stichtag" / "services" / "defaults.py").write_text(body, encoding="utf-8")


def _wrap(text: str, width: int = 84) -> list[str]:
    words, lines, line = text.split(" "), [], ""
    for word in words:
        if line and len(line) + len(word) + 1 > width:
            lines.append(line + " ")
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return lines


def main() -> None:
    """Score, fit, report (and with --write, rewrite the defaults module)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="data directory of this run (kept)")
    parser.add_argument("--refusal", type=float, default=0.95,
                        help="share of unanswerable fitting items to refuse (default 0.95)")
    parser.add_argument("--write", action="store_true",
                        help="rewrite app/stichtag/services/defaults.py")
    parser.add_argument("--report", type=Path, help="write the scored items and tables here")
    parser.add_argument("--from-report", type=Path,
                        help="refit from the scored items of an earlier --report")
    parser.add_argument("--load-only", action="store_true",
                        help="load and index the corpora into DATA, then stop (a later run "
                             "scores them)")
    parser.add_argument("--xquad-share", type=float, default=1.0,
                        help="score this share of the XQuAD questions (by id hash; 1: all)")
    parser.add_argument("--lexical-only", action="store_true",
                        help="fit without the cross-encoder feature (relevance-1), to compare")
    args = parser.parse_args()
    args.cross_encoder = None
    rows = _rows_from(args.from_report, args) if args.from_report else _score_all(args)
    if args.lexical_only:
        args.cross_encoder = None
    _fit_and_report(rows, args)


def _rows_from(report: Path, args: argparse.Namespace) -> list[Scored]:
    """The scored items of an earlier report (and the cross-encoder that scored them)."""
    data = json.loads(report.read_text(encoding="utf-8"))
    args.cross_encoder = data.get("cross_encoder")
    return [Scored(item=Item(source=i["source"], id=i["id"], question="", valid_at=SLOT0,
                             known_at=SLOT0, answerable=i["answerable"], fit=i["fit"]),
                   features={f: i[f] for f in FEATURES if f in i}, scope=i["scope"])
            for i in data["items"]]


def _score_all(args: argparse.Namespace) -> list[Scored]:
    """Load the corpora (once per data directory) and assess every item."""
    for needed in (LAW / "manifest.csv", SHARED / "eval/clapnq", SHARED / "eval/xquad"):
        if not needed.exists():
            sys.exit(f"missing: {needed}")
    from stichtag.models.build import build_models  # noqa: PLC0415

    build_models(args.data / "models")  # idempotent
    svc = bootstrap(Settings(data_dir=args.data))
    try:
        now = datetime.now(UTC)
        rows: list[Scored] = []
        law = load_law(svc)
        clapnq, clapnq_items = load_clapnq(svc, args.data, now)
        xde, xde_items = load_xquad(svc, "de", now, args.xquad_share)
        xen, xen_items = load_xquad(svc, "en", now, args.xquad_share)
        if args.load_only:
            for who in (law, clapnq, xde, xen):
                svc.indexer.catch_up(who.tenant_id)
            sys.exit(0)
        cross = svc.answers.cross if svc.answers is not None else None
        args.cross_encoder = cross.model_hash if cross is not None else None
        for who, items in ((law, list(law_items(now))),
                           (law, list(law_question_items(now))), (clapnq, clapnq_items),
                           (xde, xde_items), (xen, xen_items)):
            print(f"indexing {items[0].source} ...", file=sys.stderr, flush=True)
            svc.indexer.catch_up(who.tenant_id)
            rows.extend(score(svc, who, items))
    finally:
        svc.close()
    return rows


def _fit_and_report(rows: list[Scored], args: argparse.Namespace) -> None:
    """Fit on the fitting items, print the tables, write the report and defaults."""
    fitting = [r for r in rows if r.item.fit]
    grid = [fit_at(fitting, t, args.refusal, args.cross_encoder) for t in SCOPE_GRID]
    for g in grid:
        print(f"theta_scope {g.theta_scope:.2f}: theta_rel {g.theta_rel:.4f}, weighted "
              f"delivery {g.delivery:.4f}", file=sys.stderr)
    # The strictest scope gate that costs at most SCOPE_SLACK of delivery: a refusal that
    # names the missing subject ("none of: Arbeitslohn occurs in force") says more than one
    # that names a score, and XQuAD's in-subject negatives make the pure optimum lenient.
    top = max(g.delivery for g in grid)
    best = max((g for g in grid if g.delivery >= top - SCOPE_SLACK),
               key=lambda g: g.theta_scope)
    theta_scope, theta_rel, model = best.theta_scope, best.theta_rel, best.model
    table = evaluate(rows, model, theta_rel, theta_scope)
    hashes = {"law manifest": sha256(LAW / "manifest.csv"),
              **{name: sha256(REPO / "eval" / name) for name in LAW_SETS},
              **{f"law_questions/{h}.jsonl": sha256(LAW_QUESTIONS / f"{h}.jsonl")
                 for h in ("fit", "test")},
              "clapnq answerable": sha256(SHARED / "eval/clapnq/clapnq_dev_answerable.jsonl"),
              "clapnq unanswerable": sha256(
                  SHARED / "eval/clapnq/clapnq_dev_unanswerable.jsonl"),
              "xquad.de": sha256(SHARED / "eval/xquad/xquad.de.json"),
              "xquad.en": sha256(SHARED / "eval/xquad/xquad.en.json")}
    weights_text = ", ".join(f"{n} {w:+.3f}" for n, w in zip(model.features, model.weights,
                                                             strict=True))
    sizes = ", ".join(f"{s} {sum(1 for r in fitting if r.item.source == s)}"
                      for s in sorted({r.item.source for r in fitting}))
    rationale = (
        f"Built-in default fitted by eval/fit_defaults.py on public data ({sizes} fitting "
        f"items; CLAPnq Apache-2.0, XQuAD CC BY-SA 4.0, German federal law; sha256 "
        + ", ".join(f"{k} {v[:12]}" for k, v in hashes.items())
        + f"). Relevance model (standardized weights {weights_text}, intercept "
        f"{model.intercept:+.3f}) fitted on the items passing the scope gate, sources "
        f"weighted equally; theta_rel {theta_rel:.4f}: the lowest threshold refusing >= "
        f"{args.refusal:.0%} of unanswerable fitting items with both gates (equal source "
        f"weights); theta_scope {theta_scope:.2f}: of the grid 0-0.6, the strictest whose "
        f"weighted delivery of answerable fitting items ({best.delivery:.1%}) is within "
        f"{SCOPE_SLACK:.0%} of the best ({top:.1%}). tau 1.0. See docs/thresholds.md.")
    print(json.dumps({"theta_scope": theta_scope, "theta_rel": theta_rel,
                      "model": model.to_dict(), "table": table}, indent=2))
    if args.report:
        args.report.write_text(json.dumps({
            "theta_scope": theta_scope, "theta_rel": theta_rel, "model": model.to_dict(),
            "table": table, "hashes": hashes, "features": list(model.features),
            "cross_encoder": args.cross_encoder,
            "items": [{"source": r.item.source, "id": r.item.id, "fit": r.item.fit,
                       "answerable": r.item.answerable, "scope": r.scope, **r.features}
                      for r in rows]}, indent=1), encoding="utf-8")
    if args.write:
        write_defaults(model, theta_rel, theta_scope, rationale)
        print("wrote app/stichtag/services/defaults.py", file=sys.stderr)


if __name__ == "__main__":
    main()
