"""The one error the extraction room raises: a document it will not turn into text.

``field`` names the request part at fault (``file``, ``media_type``, ``password``) and
``reason`` says why in words a user can act on; the API maps it to a 4xx (422 for
content it cannot read, 413 for documents over a limit, which ``limit`` marks).
"""

from __future__ import annotations


# The brief and the API name it for what happens (a refusal), not for a fault: N818 off.
class ExtractionRefused(ValueError):
    """A document that cannot be extracted: encrypted, no text layer, corrupt, too big."""

    field: str
    reason: str
    limit: bool

    def __init__(self, field: str, reason: str, *, limit: bool = False) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason
        self.limit = limit
