"""Types shared by the ports: vectors, the planner, progress callbacks, the clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from stichtag.domain.bitemporal import Current, Plan

Vector = npt.NDArray[np.float32]
Planner = Callable[[list[Current]], Plan]
Progress = Callable[[str, int, int], None]
"""``(stage, done, total)`` of a long operation, for a progress bar."""


class Clock(Protocol):
    """The server's wall clock (aware UTC); fixed in unit tests."""

    def now(self) -> datetime:
        """The current instant."""
        ...
