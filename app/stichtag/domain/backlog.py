"""How fast a backlog drains, from samples of its size (pure; docs/api.md, "Index status").

The embedding backlog is drained by whichever process owns a tenant's embedding work (a
server's worker, or ``stichtag index sync``), so the rate is read off the backlog itself:
successive sizes, seen over a sliding window. A sample larger than the one before means
new work arrived (an ingest): the window starts again there, so the estimate never mixes
a drain with a refill.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

WINDOW = 120.0
"""Seconds of samples the rate is computed over."""
MIN_SPAN = 1.0
"""Seconds two samples must be apart before a rate is given."""


@dataclass
class DrainRate:
    """A backlog's drain rate over the last ``window`` seconds of samples."""

    window: float = WINDOW
    samples: deque[tuple[float, int]] = field(default_factory=deque)

    def observe(self, at: float, pending: int) -> float | None:
        """Add a sample (monotonic seconds, backlog size); returns items per second, 0.0
        while nothing drained, or None until the samples span ``MIN_SPAN``."""
        if self.samples and pending > self.samples[-1][1]:
            self.samples.clear()
        self.samples.append((at, pending))
        while len(self.samples) > 2 and at - self.samples[1][0] >= self.window:
            self.samples.popleft()
        first_at, first = self.samples[0]
        span = at - first_at
        if span < MIN_SPAN:
            return None
        return max(0, first - pending) / span


def eta_seconds(pending: int, rate: float | None) -> float | None:
    """Seconds until a backlog of ``pending`` is gone at ``rate``; 0 when there is none,
    None when it is not draining (or the rate is not known yet)."""
    if pending == 0:
        return 0.0
    if not rate:
        return None
    return round(pending / rate, 1)
