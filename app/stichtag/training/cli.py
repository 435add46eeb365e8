"""``stichtag models train-reranker``: arguments and the run (JAX is imported only in ``run``).

    stichtag models train-reranker --out .data/train/reranker --seed 0 --epochs 2 \\
        --freeze-layers 8 --budget-minutes 120
    stichtag models train-reranker --out .data/train/reranker --resume   # continue

Writes ``OUT/progress.log`` (plain), ``OUT/checkpoint/`` (every ``--checkpoint-every``
steps and when the budget ends), ``OUT/cache/`` (frozen-layer states), and when the
steps are done ``OUT/model/e5-small-rerank{,-int8}/`` and ``OUT/model/e5-small-rerank.stce``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``train-reranker`` (defaults are ``TrainConfig``'s)."""
    parser.add_argument("--out", type=Path, help="run directory (default DATA_DIR/train/reranker)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, help="total optimizer steps (overrides --epochs)")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--budget-minutes", type=float,
                        help="wall-time budget: checkpoint and stop cleanly when it is used up")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint")
    parser.add_argument("--labels", type=Path,
                        help="extra JSONL of {question, passage, label} to train on")
    parser.add_argument("--freeze-layers", type=int, default=8,
                        help="layers 0..N-1 and the embeddings stay frozen")
    parser.add_argument("--max-len", type=int, default=192, help="tokens per pair row")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads for XLA (1 leaves the second core to others)")
    parser.add_argument("--shared", type=Path, help="the shared/ directory with the data sets")
    parser.add_argument("--retrieved", type=int, default=0, metavar="K",
                        help="also pair each CLAPnq calibration question with its top K "
                             "passages by e5 retrieval, as the reranker sees them (0: off)")
    parser.add_argument("--clapnq-repeat", type=int, default=1, metavar="N",
                        help="list the CLAPnq pairs N times (a weight)")
    parser.add_argument("--layers", type=int, default=12,
                        help="a student: keep e5's first N layers (12: the whole encoder)")
    parser.add_argument("--law-questions", type=Path, metavar="FIT_JSONL",
                        help="train on this law question file (the fit half) instead of the "
                             "heading templates")
    parser.add_argument("--xquad-cross", action="store_true",
                        help="add XQuAD questions paired with the other language's passages")
    parser.add_argument("--export-only", action="store_true",
                        help="export OUT/checkpoint as it is (e.g. after a budget stop)")


def limit_threads(threads: int) -> None:
    """Keep this process (all its threads) on ``threads`` cores.

    jaxlib 0.10's CPU runtime starts one Eigen worker per core whatever ``XLA_FLAGS``
    say (measured: ~155 % CPU with the single-thread flags), so the bound is the CPU
    affinity, which every thread inherits. Call before jax starts its threads.
    """
    if threads < 1:
        raise ValueError("--threads must be >= 1")
    allowed = sorted(os.sched_getaffinity(0))
    if threads < len(allowed):
        os.sched_setaffinity(0, allowed[-threads:])
    if threads == 1 and "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false"


def _retriever(args: argparse.Namespace, settings: Any) -> Any:
    """The server's embedder for ``--retrieved`` (the same vectors as at ingest)."""
    if args.retrieved <= 0:
        return None
    if settings is None:
        raise SystemExit("--retrieved needs the models directory (run through the stichtag CLI)")
    from stichtag.bootstrap import load_embedder  # noqa: PLC0415

    return load_embedder(settings)


def run(args: argparse.Namespace, data_dir: Path, settings: Any = None) -> int:
    """Train (or resume), export when the steps are done; 0 on success."""
    limit_threads(args.threads)
    # jax loads here, after the thread limit, and only for this command
    from stichtag.models.cross_encoder import student  # noqa: PLC0415
    from stichtag.training import data, train  # noqa: PLC0415
    from stichtag.training.checkpoint import checkpoint_result  # noqa: PLC0415
    from stichtag.training.state import TrainConfig  # noqa: PLC0415

    out: Path = (args.out or data_dir / "train" / "reranker").resolve()
    config = TrainConfig(
        seed=args.seed, epochs=args.epochs, steps=args.steps, layers=args.layers,
        freeze_layers=args.freeze_layers,
        max_len=args.max_len, batch_size=args.batch_size, lr=args.lr,
        checkpoint_every=args.checkpoint_every, eval_every=args.eval_every,
    )
    shared = args.shared or data.SHARED
    pairs, sources = data.training_pairs(
        shared=shared, labels=args.labels, retriever=_retriever(args, settings),
        retrieved_k=args.retrieved, clapnq_repeat=args.clapnq_repeat,
        law_templates=args.law_questions is None)
    pairs, sources = _student_pairs(args, shared, pairs, sources)
    validation = data.validation_pairs(shared=shared)
    weights, base_sha, base_source = train.load_base()
    base = (student(weights, config.layers), base_sha, base_source)
    if args.export_only:
        config, result = checkpoint_result(out)
        if result.data_hash != data.pairs_hash(pairs):
            raise SystemExit(f"{out}: the checkpoint was trained on other data")
        return _export(out, result, config, base=base, sources=sources,
                       validation=validation)
    with _Bar(enabled=sys.stderr.isatty() and not args.json) as bar:
        result = train.train(out, config, pairs, validation, resume=args.resume,
                             budget_minutes=args.budget_minutes, progress=bar.update,
                             base=base)
    if result.finished:
        return _export(out, result, config, base=base, sources=sources,
                       validation=validation)
    print(json.dumps({"out": str(out), "step": result.state.step,
                      "total_steps": result.total_steps, "finished": False}, indent=2))
    return 0


def _student_pairs(args: argparse.Namespace, shared: Path, pairs: list[Any],
                   sources: list[Any]) -> tuple[list[Any], list[Any]]:
    """Add the student's sources: the law question set's fit half, XQuAD across languages."""
    from stichtag.training import data, student_data  # noqa: PLC0415

    if args.law_questions is not None:
        law, skipped = student_data.law_question_pairs(args.law_questions, shared=shared)
        if skipped:
            print(f"{args.law_questions}: {skipped} items without their gold text in the "
                  "version, left out", file=sys.stderr)
        sources.append(data.DataSource(
            name="law-questions-fit-half", license=data.LAW_LICENSE,
            files={str(args.law_questions): data.file_sha256(args.law_questions)},
            pairs=len(law)))
        pairs = pairs + law
    if args.xquad_cross:
        cross = student_data.xquad_cross_pairs("train", shared=shared)
        sources.append(data.DataSource(name="xquad-cross-language-train",
                                       license=data.XQUAD_LICENSE, files={}, pairs=len(cross)))
        pairs = pairs + cross
    return pairs, sources


def _export(out: Path, result: Any, config: Any, *, base: Any, sources: Any,
            validation: Any) -> int:
    """Export the run's model directories and artifact; print a JSON summary."""
    from stichtag.training import export  # noqa: PLC0415 - jax is already loaded by the caller

    meta = export.export(out / "model", result, config, base[0], base_source=base[2],
                         sources=sources, validation=validation)
    (out / "export_checks.json").write_text(
        json.dumps(meta["export_checks"], indent=2, sort_keys=True) + "\n")
    summary = {"out": str(out), "step": result.state.step, "total_steps": result.total_steps,
               "finished": result.finished, "export": str(out / "model"),
               "checks": meta["export_checks"]}
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


class _Bar:
    """A rich progress bar with loss and pairs/s on a terminal; silent otherwise."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _Bar:
        if self.enabled:
            from rich.progress import (  # noqa: PLC0415 - only on a terminal
                BarColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                TextColumn("loss {task.fields[loss]:.4f}  {task.fields[rate]:.1f} pairs/s"),
                TimeRemainingColumn(), transient=False)
            self._progress.start()
        return self

    def update(self, record: dict[str, float]) -> None:
        """Called by the training loop every few steps."""
        if self._progress is None:
            return
        if self._task is None:
            self._task = self._progress.add_task("train", total=record["total"], loss=0.0,
                                                 rate=0.0)
        self._progress.update(self._task, completed=record["step"], loss=record["loss"],
                              rate=record["pairs_per_s"])

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
