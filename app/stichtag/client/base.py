"""The methods both clients share: each operation of ``stichtag.client.operations`` once,
bound by :class:`~stichtag.client.core.Operation` to the client's transport."""

from __future__ import annotations

from stichtag.client import operations as op
from stichtag.client.core import Operation


class Operations:
    """The methods both clients have, one line per operation."""

    ingest = Operation(op.ingest)
    ingest_file = Operation(op.ingest_file)
    document = Operation(op.document)
    history = Operation(op.history)
    retract = Operation(op.retract)
    correct = Operation(op.correct)
    version = Operation(op.version)
    version_diff = Operation(op.version_diff)
    erase = Operation(op.erase)
    original = Operation(op.original)
    page = Operation(op.page)
    changes = Operation(op.changes)
    search = Operation(op.search)
    answer = Operation(op.answer)
    compare = Operation(op.compare)
    receipt = Operation(op.receipt)
    receipt_html = Operation(op.receipt_html)
    resolve = Operation(op.resolve)
    anchor = Operation(op.anchor)
    evidence = Operation(op.evidence)
    check_answer = Operation(op.check_answer)
    run = Operation(op.run)
    replay = Operation(op.replay)
    impact = Operation(op.impact)
    gaps = Operation(op.gaps)
    index_status = Operation(op.index_status)
    thresholds = Operation(op.thresholds)
    leverage = Operation(op.leverage)
    set_thresholds = Operation(op.set_thresholds)
    checkpoint = Operation(op.checkpoint)
    inclusion = Operation(op.inclusion)
    consistency = Operation(op.consistency)
    keys = Operation(op.keys)
    create_key = Operation(op.create_key)
    revoke_key = Operation(op.revoke_key)
    rotate_key = Operation(op.rotate_key)
    review_samples = Operation(op.review_samples)
    create_review_sample = Operation(op.create_review_sample)
    review_sample = Operation(op.review_sample)
    review_report = Operation(op.review_report)
    record_verdict = Operation(op.record_verdict)
    health = Operation(op.health)
    ready = Operation(op.ready)
    metrics = Operation(op.metrics)
