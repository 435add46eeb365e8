"""GET /v1/runs/{run_id}/receipt: a receipt of an answer that verifies offline
(docs/audit.md, "Receipts")."""

from __future__ import annotations

import msgspec
from litestar import Controller, Response, get
from litestar.params import FromPath

from stichtag.api.deps import Svc, Who
from stichtag.api.schemas.receipts import ReceiptOut
from stichtag.audit.receipt_html import render_receipt


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

    @get("/{run_id:str}/receipt/html", operation_id="getReceiptHtml", sync_to_thread=True,
         media_type="text/html; charset=utf-8")
    def receipt_html(self, run_id: FromPath[str], svc: Svc, who: Who) -> Response[str]:
        """The same receipt as a printable page, for a file or a working paper (the JSON
        receipt is what verifies)."""
        return Response(render_receipt(svc.receipts.receipt(who, run_id)),
                        media_type="text/html; charset=utf-8",
                        headers={"Content-Security-Policy": "default-src 'none'; "
                                 "style-src 'unsafe-inline'"})
