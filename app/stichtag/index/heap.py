"""Give freed heap memory back to the kernel after a large round of indexing work.

glibc keeps the memory that Python, tantivy and onnxruntime free in its arenas; ``free``
returns pages only from the top of each heap. A lexical round frees tens of thousands of
index documents and an embedding round thousands of token lists, scattered among objects
that stay, so the process's RSS stayed at its highest round ever (the server's worker
keeps running for days). ``malloc_trim(0)`` releases the free pages inside the heaps as
well (``madvise``): a few milliseconds after a round that took seconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import cache


@cache
def _trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to do
        return None
    return function


def release() -> bool:
    """Return free heap pages to the kernel; ``False`` where the C library cannot."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
