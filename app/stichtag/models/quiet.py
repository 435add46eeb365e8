"""Library chatter of the model build, kept at debug level."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def library_chatter_at_debug() -> Iterator[None]:
    """onnxruntime's quantizer logs a line per tensor through the root logger at INFO
    ("Quantization parameters for tensor … not specified", "Ignore MatMul"): about 70
    lines before anything a user needs, and one WARNING advising a pre-processing step
    ("Please consider to run pre-processing before quantization") that the build does not
    need: the graphs it quantizes are built here, already in the form that step produces.
    Shown with STICHTAG_LOG_LEVEL=debug only."""
    root = logging.getLogger()
    if root.getEffectiveLevel() <= logging.DEBUG:
        yield
        return
    previous = root.level
    root.setLevel(logging.WARNING)
    advice = _Advice()
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)
        root.setLevel(previous)


class _Advice(logging.Filter):
    """Drops the quantizer's pre-processing advice (see ``library_chatter_at_debug``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing")
