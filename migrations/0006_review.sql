-- 0006: support review (issue 10). A verbatim citation proves that the passage exists, not
-- that the sentence follows from it; people judge that on a reproducible sample. A sample
-- keeps its seed, strata and population sizes, and its items are the (answer run,
-- sentence, citation) pairs drawn. Verdicts are append-only: a later verdict may supersede
-- an earlier one for the same item, nothing is edited or deleted, and every verdict is a
-- leaf of the tenant's run log (the runs row with run_id = verdict_id).

CREATE TABLE review_samples (
    sample_id      uuid PRIMARY KEY,
    tenant_id      uuid NOT NULL REFERENCES tenants,
    created_by     text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    seed           bigint NOT NULL,
    strata         text[] NOT NULL,
    n_per_stratum  integer NOT NULL CHECK (n_per_stratum >= 1),
    filters        jsonb NOT NULL,
    -- The sampler's clearance: a key below it cannot see the sample at all (same 404).
    clearance      smallint NOT NULL CHECK (clearance BETWEEN 0 AND 3),
    population     jsonb NOT NULL,
    UNIQUE (tenant_id, sample_id)
);

CREATE TABLE review_items (
    tenant_id      uuid NOT NULL REFERENCES tenants,
    sample_id      uuid NOT NULL,
    item           integer NOT NULL CHECK (item >= 1),
    stratum        text NOT NULL,
    run_id         uuid NOT NULL REFERENCES runs,
    sentence       integer NOT NULL CHECK (sentence >= 0),
    citation       integer NOT NULL CHECK (citation >= 0),
    document       text NOT NULL,
    version_id     text NOT NULL,
    start_cp       integer NOT NULL,
    end_cp         integer NOT NULL,
    generator      text NOT NULL,
    -- Where the cited evidence stood in retrieval (evidence id, ranks, scores), so a
    -- failed sentence can be traced to retrieval, generator or source.
    trace          jsonb NOT NULL,
    PRIMARY KEY (tenant_id, sample_id, item),
    UNIQUE (tenant_id, sample_id, run_id, sentence, citation),
    FOREIGN KEY (tenant_id, sample_id) REFERENCES review_samples (tenant_id, sample_id)
);

CREATE TABLE review_verdicts (
    verdict_id     uuid PRIMARY KEY REFERENCES runs (run_id),
    tenant_id      uuid NOT NULL REFERENCES tenants,
    sample_id      uuid NOT NULL,
    item           integer NOT NULL,
    verdict        text NOT NULL CHECK (verdict IN ('full', 'partial', 'none', 'contradicts')),
    note           text CHECK (length(note) <= 2000),
    reviewer       text NOT NULL,
    supersedes     uuid,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (tenant_id, sample_id, item, verdict_id),
    FOREIGN KEY (tenant_id, sample_id, item) REFERENCES review_items (tenant_id, sample_id, item),
    -- A verdict supersedes one of the same tenant, sample and item, and at most once: the
    -- verdicts of an item form one chain, whose newest link is the current verdict.
    FOREIGN KEY (tenant_id, sample_id, item, supersedes)
        REFERENCES review_verdicts (tenant_id, sample_id, item, verdict_id),
    CHECK (supersedes IS DISTINCT FROM verdict_id)
);
CREATE UNIQUE INDEX review_verdicts_superseded ON review_verdicts (tenant_id, supersedes)
    WHERE supersedes IS NOT NULL;
CREATE UNIQUE INDEX review_verdicts_first ON review_verdicts (tenant_id, sample_id, item)
    WHERE supersedes IS NULL;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['review_samples', 'review_items', 'review_verdicts']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_tenant()) '
                       'WITH CHECK (tenant_id = app_tenant())', t);
    END LOOP;
END $$;

-- Read and append only; no UPDATE, DELETE or TRUNCATE grant exists.
GRANT SELECT, INSERT ON review_samples, review_items, review_verdicts TO stichtag_app;

-- The grants keep the application role away from changes; these triggers also bind the
-- owner, so a review record changes only by a new, logged verdict.
CREATE FUNCTION review_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['review_samples', 'review_items', 'review_verdicts']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION review_append_only()', t || '_append_only', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION review_append_only()',
                       t || '_no_truncate', t);
    END LOOP;
END $$;

-- Run log leaves now include review records.
ALTER TABLE runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE runs ADD CONSTRAINT runs_kind_check
    CHECK (kind IN ('search', 'answer', 'review_sample', 'review_verdict'));
