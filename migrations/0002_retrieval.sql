-- 0002: retrieval. Passages are deduplicated per tenant by the hash of the text that is
-- embedded, so an embedding is computed once per distinct passage (DESIGN.md section 4).
-- Embeddings are filled in asynchronously by the indexer; a NULL embedding is simply not
-- yet searchable by vector.

CREATE TABLE passages (
    passage_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants,
    hash        bytea NOT NULL,
    text        text NOT NULL,
    embedding   vector(384),
    model_hash  text,
    UNIQUE (tenant_id, hash)
);
-- HNSW over cosine distance (pgvector >= 0.8: iterative scans keep filtered queries at k).
CREATE INDEX passages_embedding ON passages USING hnsw (embedding vector_cosine_ops);
CREATE INDEX passages_pending ON passages (tenant_id, passage_id) WHERE embedding IS NULL;

-- Where passages sit in a version is stored on the version row as parallel arrays (like
-- its blocks), not as one row per passage per version: a row per placement would cost
-- about the raw size of the text for every version of a long law (bench/bench_ingest.py).
ALTER TABLE versions
    ADD COLUMN passage_ids       bigint[]  NOT NULL DEFAULT '{}',
    ADD COLUMN passage_starts    integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN passage_ends      integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN passage_u16_starts integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN passage_u16_ends  integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN passage_path_ids  bigint[]  NOT NULL DEFAULT '{}';
ALTER TABLE versions ADD CONSTRAINT versions_passage_arrays CHECK (
    cardinality(passage_ids) = cardinality(passage_starts)
    AND cardinality(passage_ids) = cardinality(passage_ends)
    AND cardinality(passage_ids) = cardinality(passage_u16_starts)
    AND cardinality(passage_ids) = cardinality(passage_u16_ends)
    AND cardinality(passage_ids) = cardinality(passage_path_ids));

-- Every search (and later answer) run, with its request, as-of pair and candidates.
CREATE TABLE runs (
    run_id      uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants,
    kind        text NOT NULL CHECK (kind IN ('search', 'answer')),
    key_id      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    record      jsonb NOT NULL
);
CREATE INDEX runs_tenant_created ON runs (tenant_id, created_at);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['passages', 'runs']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_tenant()) '
                       'WITH CHECK (tenant_id = app_tenant())', t);
    END LOOP;
END $$;

GRANT SELECT, INSERT ON passages, runs TO stichtag_app;
GRANT UPDATE (embedding, model_hash) ON passages TO stichtag_app;
