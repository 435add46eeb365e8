"""Progress of a long ingest on stderr (docs/cli.md, "Progress"): files done of the total,
bytes, elapsed time and rate. A person at a terminal sees one line rewritten in place; a
pipe or a log file gets a plain line every ``every`` files, so a log of a corpus load
stays readable and ``grep``-able. Silent when disabled (``--json``)."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

QUIET_SECONDS = 30.0
"""A plain line also after this long without one: a few large PDFs can take minutes."""
REDRAW_SECONDS = 0.1
"""The terminal line is redrawn at most this often (thousands of small files)."""


def size(n: float) -> str:
    """Bytes in decimal units, as file managers show them: 512 B, 12.3 kB, 4.5 MB."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def clock_text(seconds: float) -> str:
    """Elapsed time as m:ss, or h:mm:ss from an hour on."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


class Progress:
    """Counts files (or manifest rows) and bytes; reports on ``stream`` (stderr)."""

    def __init__(self, total: int, *, enabled: bool, total_bytes: int | None = None,
                 every: int = 25, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, width: int | None = None) -> None:
        self.total, self.total_bytes, self.enabled = total, total_bytes, enabled
        self.every = max(1, every)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = enabled and self.stream.isatty()
        # A line longer than the terminal wraps, and \r then rewrites only its last row.
        self.width = width or shutil.get_terminal_size().columns
        self.clock = clock
        self.done = self.bytes = 0
        self.started = self._said = self._drawn = clock()
        self._width = 0

    def line(self, label: str = "") -> str:
        """Where the work stands: ``ingest 40/120 files · 3.1 MB of 9.0 MB · 0:12 · 3.3
        files/s, 258.3 kB/s · label``."""
        elapsed = max(self.clock() - self.started, 1e-9)
        of = f" of {size(self.total_bytes)}" if self.total_bytes else ""
        text = (f"ingest {self.done}/{self.total} files · {size(self.bytes)}{of} · "
                f"{clock_text(elapsed)} · {self.done / elapsed:.1f} files/s, "
                f"{size(self.bytes / elapsed)}/s")
        return f"{text} · {label}" if label else text

    def step(self, label: str, nbytes: int = 0) -> None:
        """One file (or row) done, ``nbytes`` of it read; ``label`` names it."""
        self.done += 1
        self.bytes += nbytes
        if not self.enabled:
            return
        now = self.clock()
        last = self.done == self.total
        if self.tty:
            if last or now - self._drawn >= REDRAW_SECONDS:
                self._drawn = now
                text = self.line(label)[:self.width - 1]
                # \r and padding over the previous, longer line: no terminal codes needed
                self.stream.write("\r" + text.ljust(self._width))
                self._width = len(text)
                self.stream.flush()
        elif last or self.done % self.every == 0 or now - self._said >= QUIET_SECONDS:
            self._said = now
            print(self.line(label), file=self.stream, flush=True)

    def close(self) -> None:
        """End the terminal line, so what follows starts on its own."""
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()
