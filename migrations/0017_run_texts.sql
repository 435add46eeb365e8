-- 0017: sealed texts (docs/audit.md, "Sealed texts"; docs/operations.md, "GDPR erasure").
-- A run record that quotes a version (answer sentences, an LLM's draft and exchanges, a
-- check run's answer and quotes) is logged with each such text replaced by a salted
-- commitment, SHA-256(salt || UTF-8(text)); the text and its salt are kept here, outside
-- the hashed leaf. Erasing a version deletes the rows that came from it, so the text
-- leaves the run log while every leaf, proof and signed checkpoint stays as it was.
--
-- The rows are written with their run (same transaction, the foreign key onto runs) and
-- never changed; only erase_run_texts() deletes, and only rows of a version that has an
-- erasure row, so the application role still cannot remove what an auditor relies on
-- outside an erasure.

CREATE TABLE run_texts (
    tenant_id   uuid NOT NULL REFERENCES tenants,
    run_id      uuid NOT NULL,
    commitment  bytea NOT NULL CHECK (octet_length(commitment) = 32),
    salt        bytea NOT NULL CHECK (octet_length(salt) = 32),
    text        text NOT NULL,
    version_ids text[] NOT NULL,        -- the versions the text came from
    PRIMARY KEY (tenant_id, run_id, commitment),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, run_id)
);
-- An erasure finds every text of a version without reading the runs.
CREATE INDEX run_texts_versions ON run_texts USING gin (version_ids);

ALTER TABLE run_texts ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_texts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON run_texts USING (tenant_id = app_tenant())
    WITH CHECK (tenant_id = app_tenant());
GRANT SELECT, INSERT ON run_texts TO stichtag_app;

-- Append-only for everyone, the owner included, except a delete of a text one of whose
-- versions is erased (the erasure row is written first, in the same transaction).
CREATE FUNCTION run_texts_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM erasures e
                                    WHERE e.tenant_id = OLD.tenant_id
                                      AND e.version_id = ANY(OLD.version_ids)) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'run_texts is append-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER run_texts_append_only BEFORE UPDATE OR DELETE ON run_texts
    FOR EACH ROW EXECUTE FUNCTION run_texts_guard();
CREATE TRIGGER run_texts_no_truncate BEFORE TRUNCATE ON run_texts
    FOR EACH STATEMENT EXECUTE FUNCTION review_append_only();

-- Delete the sealed texts that came from an erased version of the current tenant;
-- idempotent (a second call deletes nothing), like erase_version(). Returns the count.
CREATE FUNCTION erase_run_texts(p_version_id text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    t uuid := app_tenant();
    n bigint;
BEGIN
    IF t IS NULL OR NOT EXISTS (SELECT 1 FROM erasures
                                WHERE tenant_id = t AND version_id = p_version_id) THEN
        RAISE EXCEPTION 'version % has no erasure record', p_version_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    DELETE FROM run_texts WHERE tenant_id = t AND version_ids @> ARRAY[p_version_id];
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION erase_run_texts(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION erase_run_texts(text) TO stichtag_app;
