"""The law questions in German and English, before and after, side by side.

    python bench/law_languages.py --tenant law --out DIR [--sample N] CODE_DIR [CODE_DIR ...]

For each checkout (CODE_DIR: this one, or a ``git worktree add --detach`` of another
commit), runs ``stichtag eval`` of that checkout on the same tenant (STICHTAG_DATA_DIR:
the whole law corpus, embedded) over

- the test half of eval/law_questions, German and English apart;
- the three hand-written sets of eval/ (as-of, out of scope, not yet in force), as
  tests/integration/test_refusal_law.py gates them;
- ../shared/eval/law-questions-external (de.jsonl, en.jsonl, refuse.jsonl), converted to
  the eval format in DIR (gold: the span of ``gold_span`` in the expected version). That
  set is measured only: nothing is fitted, tuned or written from it.

and prints per set: answerable delivered, unanswerable refused, `partial` share of the
delivered answerable items, version in force cited (as-of correct) and gold cited, both
of the delivered answerable items. The runs are sequential (one embedded PostgreSQL).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "de-insurance-law"
EXTERNAL = REPO.parent / "shared" / "eval" / "law-questions-external"
TEST = REPO / "eval" / "law_questions" / "test.jsonl"


def _text(relative: str) -> str:
    raw = (CORPUS / relative).read_bytes().decode("utf-8").lstrip("\ufeff")
    return unicodedata.normalize("NFC", raw.replace("\r\n", "\n").replace("\r", "\n"))


def external_items(name: str) -> list[dict[str, object]]:
    """One external file in the eval format (``as_of_tx`` "latest" = no known_at)."""
    out: list[dict[str, object]] = []
    for line in (EXTERNAL / name).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        src = json.loads(line)
        item: dict[str, object] = {"id": src["id"], "question": src["question"],
                                   "valid_at": src["as_of_valid"],
                                   "answerable": src.get("answerable", True)}
        if src["as_of_tx"] != "latest":
            item["known_at"] = src["as_of_tx"]
        if item["answerable"]:
            text = _text(src["expected_version_file"])
            start = text.find(unicodedata.normalize("NFC", src["gold_span"]))
            if start < 0:
                raise SystemExit(f"{src['id']}: gold span not in its version")
            item["gold"] = {"document": src["law"], "version_file": src["expected_version_file"],
                            "span": [start, start + len(src["gold_span"])]}
        out.append(item)
    return out


def _sample(items: list[dict[str, object]], n: int | None) -> list[dict[str, object]]:
    """The ``n`` items with the smallest sha256 of their id (all when n is None), in file
    order: the same sample for every checkout and every run."""
    if n is None or n >= len(items):
        return items
    keep = set(sorted((str(i["id"]) for i in items),
                      key=lambda k: hashlib.sha256(k.encode()).hexdigest())[:n])
    return [i for i in items if i["id"] in keep]


def sets(out: Path, sample: int | None) -> dict[str, Path]:
    test = [json.loads(line) for line in TEST.read_text(encoding="utf-8").splitlines() if line]
    made = {"law test de": _sample([i for i in test if i["lang"] == "de"], sample),
            "law test en": _sample([i for i in test if i["lang"] == "en"], sample),
            "eval/ law sets": [json.loads(line) for name in (
                "asof_de_insurance.jsonl", "out_of_scope_de.jsonl", "not_yet_in_force_de.jsonl")
                for line in (REPO / "eval" / name).read_text(encoding="utf-8").splitlines()
                if line],
            "external de": external_items("de.jsonl") + external_items("refuse.jsonl"),
            "external en": external_items("en.jsonl")}
    paths = {}
    for name, items in made.items():
        path = out / (name.replace(" ", "_").replace("/", "") + ".jsonl")
        path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items),
                        encoding="utf-8")
        paths[name] = path
    return paths


def run(code: Path, tenant: str, path: Path, report: Path) -> list[dict[str, object]]:
    subprocess.run([sys.executable, "-m", "stichtag.cli", "eval", str(path), "--tenant", tenant,
                    "--corpus", str(CORPUS), "--json-out", str(report)],
                   cwd=code, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(code / "app")})
    return list(json.loads(report.read_text())["items"])


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f} % ({n}/{d})" if d else "—"


def summary(items: list[dict[str, object]]) -> dict[str, str]:
    ans = [i for i in items if i["answerable"]]
    una = [i for i in items if not i["answerable"]]
    dlv = [i for i in ans if i["delivered"]]
    return {"delivered": _pct(len(dlv), len(ans)),
            "refused": _pct(sum(not i["delivered"] for i in una), len(una)),
            "partial": _pct(sum(i["status"] == "partial" for i in dlv), len(dlv)),
            "in force": _pct(sum(bool(i["asof_correct"]) for i in dlv), len(dlv)),
            "gold": _pct(sum(bool(i["gold_hit"]) for i in dlv), len(dlv))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("codes", nargs="+", type=Path)
    parser.add_argument("--tenant", default="law")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sample", type=int, help="at most this many items of each law "
                        "test set (by sha256 of the id; default all)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    paths = sets(args.out, args.sample)
    print("| set | code | answerable delivered | unanswerable refused | partial "
          "| version in force cited | gold cited |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, path in paths.items():
        for code in args.codes:
            rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=code, check=True,
                                 capture_output=True, text=True).stdout.strip()
            report = args.out / f"{path.stem}.{rev}.json"
            s = summary(run(code.resolve(), args.tenant, path, report))
            print(f"| {name} | {rev} | {s['delivered']} | {s['refused']} | {s['partial']} "
                  f"| {s['in force']} | {s['gold']} |", flush=True)


if __name__ == "__main__":
    main()
