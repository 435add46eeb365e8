"""Turn ../shared/eval/clapnq into a stichtag corpus and labelled sets (nothing is copied
into the repository: everything is written to OUT).

    python eval/clapnq_to_eval.py OUT
    stichtag tenants create clapnq
    stichtag ingest --tenant clapnq --manifest OUT/manifest.csv
    stichtag index sync --tenant clapnq
    stichtag calibrate --tenant clapnq OUT/calibration.jsonl --target-wrong-rate 0.10 --apply
    stichtag eval OUT/test.jsonl --tenant clapnq --corpus OUT --json-out clapnq.json \
        --svg clapnq.svg

Every distinct passage becomes a document (text/plain, valid from 2020-01-01). Questions
are split into a calibration half and a test half, stratified by answerability, by a
hash of the CLAPnq id (deterministic). Gold: the gold passage's version file and the
first 40 characters of its first selected sentence (a citation containing them is a hit).
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "clapnq"


def main(out: Path) -> None:
    """Write OUT/manifest.csv, OUT/passages/*.txt, OUT/calibration.jsonl, OUT/test.jsonl."""
    if not SHARED.is_dir():
        sys.exit(f"missing: {SHARED}")
    (out / "passages").mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    rows: list[dict[str, object]] = []
    for name, answerable in (("clapnq_dev_answerable.jsonl", True),
                             ("clapnq_dev_unanswerable.jsonl", False)):
        for line in (SHARED / name).read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            gold = None
            for p in item["passages"]:
                text = f"{p['title']}\n\n{p['text'].strip()}\n"
                if text not in files:
                    files[text] = f"passages/p{len(files):04d}.txt"
                    (out / files[text]).write_text(text, encoding="utf-8")
                selected = (item.get("output") or [{}])[0].get("selected_sentences") or []
                if answerable and gold is None and selected:
                    gold = {"document": Path(files[text]).stem, "version_file": files[text],
                            "gold_text": selected[0][:40]}
            if answerable and gold is None:
                continue
            half = int(hashlib.sha256(item["id"].encode()).hexdigest(), 16) % 2
            rows.append({"id": item["id"], "question": item["input"], "answerable": answerable,
                         **({"gold": gold} if gold else {}), "_half": half})
    with (out / "manifest.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["tx_time", "document", "action", "valid_from", "source", "file", "note",
                         "title", "doc_class", "confidentiality"])
        for path in files.values():
            writer.writerow(["2020-01-01", Path(path).stem, "ingest", "2020-01-01", "clapnq",
                             path, "", "", "document", "public"])
    for half, name in ((0, "calibration.jsonl"), (1, "test.jsonl")):
        with (out / name).open("w", encoding="utf-8") as handle:
            for row in rows:
                if row["_half"] == half:
                    handle.write(json.dumps({k: v for k, v in row.items() if k != "_half"},
                                            ensure_ascii=False) + "\n")
    print(f"{len(files)} passages, {len(rows)} questions -> {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
