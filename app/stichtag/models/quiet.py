"""Library chatter of the model build, kept at debug level."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def library_chatter_at_debug() -> Iterator[None]:
    """onnxruntime's quantizer logs a line per tensor through the root logger at INFO
    ("Quantization parameters for tensor … not specified", "Ignore MatMul"): about 70
    lines before anything a user needs. Shown with STICHTAG_LOG_LEVEL=debug only."""
    root = logging.getLogger()
    if root.getEffectiveLevel() <= logging.DEBUG:
        yield
        return
    previous = root.level
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.setLevel(previous)
