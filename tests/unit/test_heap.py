"""``heap.release`` gives freed heap pages back to the kernel (docs/operations.md, "Derived
indexes")."""

from __future__ import annotations

import ctypes.util
import os

import pytest

from stichtag.index import heap

CHUNK = 64 * 1024  # under glibc's mmap threshold: these come from the heap itself
CHUNKS = 3000  # ~190 MiB


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm")
                    or ctypes.util.find_library("c") is None,
                    reason="needs Linux /proc and a C library to measure the heap")
def test_freed_heap_pages_go_back_to_the_kernel() -> None:
    blocks = [bytearray(CHUNK) for _ in range(CHUNKS)]  # zero-filled: the pages are touched
    keep = bytearray(CHUNK)  # above the freed blocks: plain free() cannot shrink past it
    grown = _rss_mib()
    del blocks
    before = _rss_mib()
    released = heap.release()
    after = _rss_mib()
    assert released is True  # glibc here, as on every supported platform
    assert before - after > 100, (grown, before, after)
    del keep

