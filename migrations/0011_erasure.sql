-- 0011: erasure (issue #16, item 6; GDPR Art. 17). The store is append-only, so nothing
-- could be erased without breaking hashes, replays and the log. An erasure removes what a
-- version *says* and keeps what it *is*: the text of its blocks, its heading paths, its
-- passages and their vectors, its originals' bytes and layout maps are blanked; its id
-- (the blake3 content address), the sentence hashes and offsets, its assertions and every
-- run record stay, so Merkle proofs, the log and replays stay verifiable
-- (docs/operations.md, "GDPR erasure").
--
-- The path is narrow and explicit: an erasure is one row here, written in the same
-- transaction as its record in the run log (the foreign key onto runs), and only the
-- SECURITY DEFINER function erase_version() may blank content, and only of a version
-- that has such a row. The application role keeps no UPDATE or DELETE grant on any
-- content table; the append-only triggers of originals and version_sources admit the
-- one blanking update and nothing else, so they still bind the owner.

CREATE TABLE erasures (
    tenant_id   uuid NOT NULL REFERENCES tenants,
    version_id  text NOT NULL,
    run_id      uuid NOT NULL,          -- the erasure's record in the run log
    seq         bigint NOT NULL,        -- its leaf number
    key_id      text NOT NULL,
    reason      text NOT NULL CHECK (length(btrim(reason)) > 0 AND length(reason) <= 2000),
    erased_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, version_id),
    FOREIGN KEY (tenant_id, version_id) REFERENCES versions (tenant_id, version_id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, run_id)
);
CREATE INDEX erasures_time ON erasures (tenant_id, erased_at);

ALTER TABLE erasures ENABLE ROW LEVEL SECURITY;
ALTER TABLE erasures FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON erasures USING (tenant_id = app_tenant())
    WITH CHECK (tenant_id = app_tenant());
GRANT SELECT, INSERT ON erasures TO stichtag_app;
CREATE TRIGGER erasures_append_only BEFORE UPDATE OR DELETE ON erasures
    FOR EACH ROW EXECUTE FUNCTION review_append_only();
CREATE TRIGGER erasures_no_truncate BEFORE TRUNCATE ON erasures
    FOR EACH STATEMENT EXECUTE FUNCTION review_append_only();

-- Flags the reads filter on (one boolean beside the row, not a join per query): an erased
-- version serves no text, no passage, no vector; an erased passage is never embedded again.
ALTER TABLE versions ADD COLUMN erased boolean NOT NULL DEFAULT false;
ALTER TABLE passages ADD COLUMN erased boolean NOT NULL DEFAULT false;

-- The log and the outbox learn the new kinds: the erasure record, and the outbox row
-- that tells the lexical index to drop an erased version's documents.
ALTER TABLE runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE runs ADD CONSTRAINT runs_kind_check
    CHECK (kind IN ('search', 'answer', 'review_sample', 'review_verdict', 'erasure'));
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind IN ('open', 'close', 'erase'));

-- An erased original keeps its row (id = blake3 of the bytes, size, media type) and loses
-- its bytes.
ALTER TABLE originals DROP CONSTRAINT originals_check;
ALTER TABLE originals ADD CONSTRAINT originals_check CHECK (octet_length(data) IN (size, 0));

-- The append-only rule of 0009 with its one exception: blanking the bytes of an original
-- (or the layout map of a source) whose versions are erased, every other column unchanged.
CREATE OR REPLACE FUNCTION originals_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One IF per table: a PL/pgSQL condition may not name a column the other table lacks.
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'originals' THEN
        IF octet_length(NEW.data) = 0 AND (to_jsonb(NEW) - 'data') = (to_jsonb(OLD) - 'data')
           AND EXISTS (SELECT 1 FROM version_sources s
                       JOIN erasures e ON e.tenant_id = s.tenant_id
                                      AND e.version_id = s.version_id
                       WHERE s.tenant_id = OLD.tenant_id
                         AND s.original_id = OLD.original_id) THEN
            RETURN NEW;
        END IF;
    ELSIF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'version_sources' THEN
        IF octet_length(NEW.layout) = 0
           AND (to_jsonb(NEW) - 'layout') = (to_jsonb(OLD) - 'layout')
           AND EXISTS (SELECT 1 FROM erasures e
                       WHERE e.tenant_id = OLD.tenant_id AND e.version_id = OLD.version_id) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

-- Blank the content of an erased version of the current tenant; idempotent (a second call
-- blanks nothing and returns zeros), so erasures can be re-applied after a restore.
-- Blocks, heading paths, passages and originals are stored once per tenant and may be
-- shared with other versions: only what no version that is not erased still uses is
-- blanked (the other versions keep serving their text; erase them too to remove it).
-- Returns {blocks, paths, passages, originals} blanked.
CREATE FUNCTION erase_version(p_version_id text) RETURNS integer[]
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    t uuid := app_tenant();
    v_blocks bigint[];
    v_paths bigint[];
    v_passages bigint[];
    n_blocks integer;
    n_paths integer;
    n_passages integer;
    n_originals integer;
BEGIN
    IF t IS NULL OR NOT EXISTS (SELECT 1 FROM erasures
                                WHERE tenant_id = t AND version_id = p_version_id) THEN
        RAISE EXCEPTION 'version % has no erasure record', p_version_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    UPDATE versions SET erased = true
    WHERE tenant_id = t AND version_id = p_version_id AND NOT erased;
    SELECT block_ids, path_ids || passage_path_ids, passage_ids
    INTO v_blocks, v_paths, v_passages
    FROM versions WHERE tenant_id = t AND version_id = p_version_id;

    UPDATE blocks b SET text = '', title = NULL, label = NULL
    WHERE b.tenant_id = t AND b.block_id = ANY(v_blocks)
      AND (b.text <> '' OR b.title IS NOT NULL OR b.label IS NOT NULL)
      AND b.block_id NOT IN (
          SELECT u.id FROM versions v CROSS JOIN LATERAL unnest(v.block_ids) AS u(id)
          WHERE v.tenant_id = t AND NOT v.erased AND v.block_ids && v_blocks);
    GET DIAGNOSTICS n_blocks = ROW_COUNT;

    UPDATE heading_paths h SET path = '{}'
    WHERE h.tenant_id = t AND h.path_id = ANY(v_paths) AND cardinality(h.path) > 0
      AND h.path_id NOT IN (
          SELECT u.id FROM versions v
          CROSS JOIN LATERAL unnest(v.path_ids || v.passage_path_ids) AS u(id)
          WHERE v.tenant_id = t AND NOT v.erased
            AND (v.path_ids && v_paths OR v.passage_path_ids && v_paths));
    GET DIAGNOSTICS n_paths = ROW_COUNT;

    UPDATE passages p SET text = '', embedding = NULL, model_hash = NULL, erased = true
    WHERE p.tenant_id = t AND p.passage_id = ANY(v_passages) AND NOT p.erased
      AND p.passage_id NOT IN (
          SELECT u.id FROM versions v CROSS JOIN LATERAL unnest(v.passage_ids) AS u(id)
          WHERE v.tenant_id = t AND NOT v.erased AND v.passage_ids && v_passages);
    GET DIAGNOSTICS n_passages = ROW_COUNT;

    UPDATE version_sources SET layout = ''::bytea
    WHERE tenant_id = t AND version_id = p_version_id AND octet_length(layout) > 0;
    UPDATE originals o SET data = ''::bytea
    WHERE o.tenant_id = t AND octet_length(o.data) > 0
      AND o.original_id IN (SELECT original_id FROM version_sources
                            WHERE tenant_id = t AND version_id = p_version_id)
      AND NOT EXISTS (SELECT 1 FROM version_sources s
                      JOIN versions v ON v.tenant_id = s.tenant_id AND v.version_id = s.version_id
                      WHERE s.tenant_id = t AND s.original_id = o.original_id AND NOT v.erased);
    GET DIAGNOSTICS n_originals = ROW_COUNT;
    RETURN ARRAY[n_blocks, n_paths, n_passages, n_originals];
END $$;
REVOKE ALL ON FUNCTION erase_version(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION erase_version(text) TO stichtag_app;
