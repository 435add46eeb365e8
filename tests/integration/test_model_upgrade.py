"""After a model upgrade, until the indexer has re-embedded a passage, its stored vector
comes from the old model and is not comparable with a query embedded by the new one.
Vector search must not rank by it and the default reranker (cosine of stored vectors)
must not score with it; before the fix both did, so gate 1 judged on meaningless scores."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from stichtag.cli.demo import DEMO_DIR
from stichtag.cli.manifest import ingest_manifest
from tests.conftest import Cluster, admin_url_for

QUESTION = "Welcher Höchstrechnungszins gilt für Neugeschäft?"


def test_vectors_of_another_model_are_not_used(services: Any, tenant: Any, cluster: Cluster,
                                               database: str) -> None:
    ingest_manifest(services, tenant, DEMO_DIR / "manifest.csv", use_tx_time=True)
    services.indexer.catch_up(tenant.tenant_id)
    now = datetime.now(UTC)
    search, answers = services.search, services.answers
    assert search.vector_candidates(tenant, QUESTION, valid_at=now, known_at=now, k=10)
    hits, _, _ = search.retrieve(tenant, QUESTION, valid_at=now, known_at=now, k=8)
    before = answers.rerank(tenant, QUESTION, hits)
    assert max(before) > 0.8

    # What an upgrade leaves behind: vectors (here: negated, so any use shows) whose
    # model hash is not the running model's.
    with psycopg.connect(admin_url_for(cluster, database), autocommit=True) as conn:
        changed = conn.execute(
            "UPDATE passages SET model_hash = 'old-model', embedding = (SELECT"
            " array_agg(-x ORDER BY n) FROM unnest(embedding::real[]) WITH ORDINALITY AS u(x, n)"
            ")::vector WHERE tenant_id = %s",
                               (tenant.tenant_id,)).rowcount
    assert changed > 0
    assert search.vector_candidates(tenant, QUESTION, valid_at=now, known_at=now, k=10) == []
    after = answers.rerank(tenant, QUESTION, hits)
    # Re-embedded on the fly (batching differs, so int8 scores move a little), never negated.
    assert all(abs(a - b) < 0.02 for a, b in zip(before, after, strict=True)), (before, after)
    # The answer stored the vectors it computed (the run's replay must see the same ones);
    # the rest wait for the indexer.
    rescored = len({h.passage_id for h in hits})
    assert services.indexer.status(tenant.tenant_id).pending_embeddings == changed - rescored
    services.indexer.catch_up(tenant.tenant_id)  # the indexer re-embeds them
    assert search.vector_candidates(tenant, QUESTION, valid_at=now, known_at=now, k=10)
