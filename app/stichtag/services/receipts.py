"""Answer receipts that verify offline (docs/audit.md, "Receipts"): the answer or refusal,
every citation with its quote, selectors and content hash, the run record exactly as the
log hashed it, its inclusion proof and the signed checkpoint. ``stichtag.audit.receipt``
checks one with no server and no database."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from stichtag.audit.receipt import RECEIPT_FORMAT, record_documents
from stichtag.domain.checkpoint import split_signed_note
from stichtag.domain.errors import Gone, Invalid, NotFound
from stichtag.domain.sealing import placeholders
from stichtag.domain.selectors import quote_context
from stichtag.ports import RunStore
from stichtag.services.access import Principal
from stichtag.services.citations import VersionCache
from stichtag.services.runlog import RunLog
from stichtag.services.runs import RunService


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class ReceiptService:
    """Receipts for the caller's recorded answers (as ``RunService.get`` lets it read)."""

    def __init__(self, runs: RunService, store: RunStore, runlog: RunLog,
                 versions: VersionCache) -> None:
        self.runs = runs
        self.store = store
        self.runlog = runlog
        self.versions = versions

    def receipt(self, principal: Principal, run_id: str) -> dict[str, Any]:
        """One self-contained receipt of an answer run."""
        row, erased = self.runs.read(principal, run_id)
        if erased:  # its quotes are gone; the record and its proof stay (GET /v1/runs)
            raise Gone(erased[0])
        if row.kind != "answer":
            raise Invalid("run_id", f"receipts are issued for answers, not {row.kind} runs")
        leaf = self.store.run_leaf(principal.tenant_id, uuid.UUID(str(row.run_id)))
        if leaf is None:
            raise NotFound("run")
        seq, leaf_hash = leaf
        size, proof, _, checkpoint = self.runlog.inclusion(principal.tenant_id, seq=seq)
        _, signatures = split_signed_note(checkpoint)
        record = row.record
        documents = record_documents(record)
        texts = self.versions.get_many(principal, [
            c["version_id"] for s in record["result"]["sentences"] for c in s["citations"]])
        sentences = []
        for s in record["result"]["sentences"]:
            cited = []
            for c in s["citations"]:
                text = texts[c["version_id"]].text
                start, end = c["start"], c["end"]
                prefix, suffix = quote_context(text, start, end)
                quote = text[start:end]
                cited.append({
                    "document": documents.get(c["version_id"], ""),
                    "version_id": c["version_id"], "start": start, "end": end,
                    "quote": quote, "prefix": prefix, "suffix": suffix,
                    "content_hash": c["version_id"],
                    "selector": [{"type": "TextQuoteSelector", "exact": quote,
                                  "prefix": prefix, "suffix": suffix},
                                 {"type": "TextPositionSelector", "start": start,
                                  "end": end}]})
            sentences.append({"text": s["text"], "citations": cited})
        return {
            "format": RECEIPT_FORMAT, "run_id": str(row.run_id), "kind": row.kind,
            "tenant": str(principal.tenant_id),
            "answer": {"question": record["request"]["question"], "as_of": record["as_of"],
                       "status": record["result"]["status"],
                       "reason": record["result"]["reason"], "sentences": sentences},
            # the record as the leaf hashes it, and the salts and texts that open its
            # sealed texts (the answer's sentences are among them)
            "record": row.sealed if row.sealed is not None else record,
            "texts": {k: v for k, v in row.openings.items() if k in placeholders(
                row.sealed or {})},
            "log": {"seq": seq, "leaf_hash": _b64(leaf_hash), "tree_size": size,
                    "inclusion": [_b64(p) for p in proof], "checkpoint": checkpoint,
                    "key_name": signatures[0].key_name if signatures else None,
                    "key_id": _b64(signatures[0].key_id) if signatures else None},
        }
