"""The run log: signed checkpoint, inclusion and consistency proofs, export (scope audit)."""

from __future__ import annotations

import base64

from litestar import Controller, Response, get
from litestar.params import FromQuery

from stichtag.api.deps import Svc, Who
from stichtag.api.schemas.log import CheckpointOut, ConsistencyOut, InclusionOut
from stichtag.domain.checkpoint import parse_checkpoint

__all__ = ["CheckpointOut", "ConsistencyOut", "InclusionOut", "LogController", "b64"]


def b64(data: bytes) -> str:
    """Standard base64, as in the checkpoint format."""
    return base64.b64encode(data).decode("ascii")


class LogController(Controller):
    """Tamper evidence for a tenant's runs."""

    path = "/v1/log"
    tags = ("audit",)

    @get("/checkpoint", operation_id="getCheckpoint", sync_to_thread=True)
    def checkpoint(self, svc: Svc, who: Who) -> CheckpointOut:
        """A freshly signed checkpoint of the tenant's log."""
        who.require("audit")
        note = svc.runlog.checkpoint(who.tenant_id)
        cp = parse_checkpoint(note.split("\n\n", 1)[0] + "\n")
        return CheckpointOut(checkpoint=note, size=cp.size, root=b64(cp.root),
                             public_key=svc.runlog.public_key())

    @get("/proofs/inclusion", operation_id="getInclusionProof", sync_to_thread=True)
    def inclusion(self, svc: Svc, who: Who, seq: FromQuery[int],
                  size: FromQuery[int | None] = None) -> InclusionOut:
        """Audit path for leaf ``seq`` (default size: the current log)."""
        who.require("audit")
        n, proof, leaf, signed = svc.runlog.inclusion(who.tenant_id, seq=seq, size=size)
        return InclusionOut(seq=seq, size=n, leaf_hash=b64(leaf), proof=[b64(p) for p in proof],
                            checkpoint=signed)

    @get("/proofs/consistency", operation_id="getConsistencyProof", sync_to_thread=True)
    def consistency(self, svc: Svc, who: Who, old: FromQuery[int],
                    new: FromQuery[int | None] = None) -> ConsistencyOut:
        """Proof that the log of ``old`` leaves is a prefix of the log of ``new`` leaves."""
        who.require("audit")
        n, proof, signed = svc.runlog.consistency(who.tenant_id, old=old, new=new)
        return ConsistencyOut(old=old, new=n, proof=[b64(p) for p in proof], checkpoint=signed)

    @get("/export", operation_id="exportLog", sync_to_thread=True,
         media_type="application/x-ndjson")
    def export(self, svc: Svc, who: Who) -> Response[str]:
        """The whole log as JSON Lines for `stichtag log verify` (header, records, checkpoint)."""
        who.require("audit")
        body = "".join(line + "\n" for line in svc.runlog.export(who.tenant_id))
        return Response(body, media_type="application/x-ndjson")
