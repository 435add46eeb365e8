"""Errors the use cases raise; the API maps each to one HTTP status in one place."""

from __future__ import annotations

from stichtag.domain.records import Erasure


class NotFound(LookupError):
    """Unknown, foreign or above-clearance id: deliberately indistinguishable."""


class Conflict(ValueError):
    """The request is well-formed but conflicts with stored state (409)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class Invalid(ValueError):
    """Bad input not covered by a more specific error (422); names the field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class Gone(LookupError):
    """The version's text was erased (410): what is kept is its erasure record."""

    def __init__(self, erasure: Erasure) -> None:
        super().__init__(f"version {erasure.version_id} was erased")
        self.erasure = erasure


class IndexBusy(RuntimeError):
    """Another process writes the index directory (tantivy's lock file): a server and the
    CLI on one data directory share ``index/``. Readers and followers are fine; a rebuild
    has to wait until that process stops."""
