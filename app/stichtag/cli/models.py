"""``stichtag models``: the offline models in the data directory.

Subcommands here need no database: they set ``standalone=(settings, args) -> exit code``
(``None`` for 0) instead of a ``handler``, and ``main`` runs them without building the
services. A new one is a function that takes the ``models`` group, adds its parser and
sets ``standalone``, called at the end of ``register``.
"""

from __future__ import annotations

import argparse
import sys

from stichtag.cli.args import Subparsers, command, group
from stichtag.cli.output import Output
from stichtag.config import Settings


def cmd_build(settings: Settings, args: argparse.Namespace) -> None:
    """Build (or check) the ONNX models; idempotent."""
    # onnx and the converter load only for this command.
    from stichtag.models.build import build_models  # noqa: PLC0415

    out = Output(as_json=args.json)
    manifests = build_models(
        settings.models_dir, progress=None if args.json else lambda m: print(m, file=sys.stderr))
    out.emit([m.name for m in manifests], lambda ms: "models ready: " + ", ".join(ms))


def register(sub: Subparsers) -> None:
    """``models build``; a further subcommand is added to ``models`` at the end."""
    models = group(sub, "models", help="offline models",
                   example="stichtag models build")
    mb = command(models, "build", help="build the ONNX models into the data directory "
                                       "(idempotent)",
                 example="stichtag models build\nSTICHTAG_DATA_DIR=/srv/stichtag "
                         "stichtag models build --json")
    mb.set_defaults(standalone=cmd_build)
    add_train_reranker(models)


def add_train_reranker(models: Subparsers) -> None:
    """``models train-reranker``: the code is in stichtag.training."""
    # stdlib only at import; JAX is imported inside run(), never by the server.
    from stichtag.training.cli import add_arguments, run  # noqa: PLC0415

    mt = command(models, "train-reranker",
                 help="fine-tune the e5 cross-encoder reranker on CPU (needs the 'train' "
                      "extra: jax, optax)",
                 example="stichtag models train-reranker --steps 2000\n"
                         "stichtag models train-reranker --help")
    add_arguments(mt)
    mt.set_defaults(standalone=lambda s, a: run(a, s.data_dir, s))
