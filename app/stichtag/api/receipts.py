"""GET /v1/runs/{run_id}/receipt: a receipt of an answer that verifies offline
(docs/audit.md, "Receipts")."""

from __future__ import annotations

import msgspec
from litestar import Controller, get
from litestar.params import FromPath

from stichtag.api.deps import Svc, Who
from stichtag.api.schemas.receipts import ReceiptOut


class ReceiptController(Controller):
    """Receipts of recorded answers (scope audit, or the key that asked)."""

    path = "/v1/runs"
    tags = ("audit",)

    @get("/{run_id:str}/receipt", operation_id="getReceipt", sync_to_thread=True)
    def receipt(self, run_id: FromPath[str], svc: Svc, who: Who) -> ReceiptOut:
        """The answer or refusal, its citations with quotes and content hashes, the run
        record, its inclusion proof and the signed checkpoint: check it with
        ``stichtag receipt verify FILE --public-key PEM``."""
        return msgspec.convert(svc.receipts.receipt(who, run_id), ReceiptOut)
