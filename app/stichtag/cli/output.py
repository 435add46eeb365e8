"""What the command prints and how it ends: output for people or JSON, one-line errors,
exit codes.

Results go to stdout (JSON with ``--json``); errors, progress and logs go to stderr, so a
script can pipe the JSON and still see what went wrong.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stichtag.bootstrap import DatabaseUnavailable, ModelsMissing
from stichtag.config import SettingsError
from stichtag.domain.bitemporal import BitemporalError
from stichtag.domain.errors import Conflict, Gone, Invalid, NotFound
from stichtag.domain.extraction import ExtractionRefused
from stichtag.domain.text import TextError
from stichtag.domain.timeutil import TimeError

EXIT_OK = 0
"""The command did what was asked."""
EXIT_ERROR = 1
"""An error (one line on stderr), or a check that found a difference: ``index check``,
``replay``, ``log verify``."""
EXIT_USAGE = 2
"""The command line itself is wrong (argparse's own code, and option combinations)."""
EXIT_ABSTAINED = 3
"""``ask`` abstained: a regular result, printed in full, that a script must not take for an
answer."""

EXIT_CODES = {EXIT_OK: "ok", EXIT_ERROR: "error, or a check that found a difference",
              EXIT_USAGE: "usage error (bad command line)", EXIT_ABSTAINED: "ask abstained"}


class CliError(Exception):
    """An expected failure to report on one line, without a traceback (exit code 1)."""


class UsageError(CliError):
    """Options that cannot go together or are missing together (exit code 2)."""


EXPECTED = (CliError, Invalid, Conflict, NotFound, Gone, TextError, TimeError, BitemporalError,
            SettingsError, ModelsMissing, DatabaseUnavailable, ExtractionRefused, OSError)
"""What a person can fix from the message alone: reported without a traceback."""


def error_line(exc: BaseException) -> str:
    """``stichtag: error: <field>: <reason>`` on one line."""
    return f"stichtag: error: {describe(exc)}"


def describe(exc: BaseException) -> str:
    """An expected error as ``<field>: <reason>`` on one line."""
    if isinstance(exc, NotFound):
        text = f"{exc}: not found" if str(exc) else "not found"
    elif isinstance(exc, DatabaseUnavailable):
        text = f"database: {exc}"
    elif isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.filename}: {exc.strerror or exc}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def exit_code(exc: BaseException) -> int:
    """The exit code an expected error ends with."""
    return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_ERROR


@dataclass(frozen=True)
class Output:
    """Prints either for people or as JSON."""

    as_json: bool

    def emit(self, data: Any, human: Callable[[Any], str]) -> None:
        """Write ``data`` as JSON or through ``human``."""
        if self.as_json:
            print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
        else:
            print(human(data))

    def note(self, text: str) -> None:
        """A remark for people on stderr (never mixed into the JSON on stdout)."""
        if not self.as_json:
            print(text, file=sys.stderr)
