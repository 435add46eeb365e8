-- 0009: originals (issue 20). A version's text may now be extracted from a PDF, an HTML
-- page or a DOCX. The version stays what it was (normalized text, content-addressed by
-- blake3 of that text), so sentences, offsets, retrieval, gates and replay are unchanged;
-- beside it we keep the uploaded file exactly as it came, so an auditor can open the
-- document a quote was cut from and anyone can re-run the (versioned, deterministic)
-- extraction on the same bytes. (0008 is another change's number: the runner accepts
-- gaps, never a number below one already applied.)

-- The uploaded bytes, content-addressed per tenant: original_id = 'b3:' + blake3(data).
-- Identical bytes in two tenants are two rows; nothing is shared across tenants
-- (docs/architecture.md §3.1), so neither can observe the other's uploads.
CREATE TABLE originals (
    tenant_id    uuid NOT NULL REFERENCES tenants,
    original_id  text NOT NULL CHECK (original_id ~ '^b3:[0-9a-f]{64}$'),
    media_type   text NOT NULL,
    size         integer NOT NULL,
    data         bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, original_id),
    CHECK (size = octet_length(data))
);
-- PDFs and DOCX are compressed already: store the bytes out of line without trying pglz.
ALTER TABLE originals ALTER COLUMN data SET STORAGE EXTERNAL;

-- Which version was extracted from which original, by which extractor (its id and the
-- library versions are in provenance, with page counts and the pages without text), and
-- the layout map from the version's offsets back to pages and boxes (zlib-compressed
-- 'stichtag-layout-1' JSON, deterministic for the same bytes and extractor). The same
-- text from two files (one law typeset twice) is one version with two rows here; reads
-- take the first one stored.
CREATE TABLE version_sources (
    tenant_id     uuid NOT NULL REFERENCES tenants,
    version_id    text NOT NULL,
    original_id   text NOT NULL,
    extractor_id  text NOT NULL,
    provenance    jsonb NOT NULL,
    layout        bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, version_id, original_id),
    FOREIGN KEY (tenant_id, version_id) REFERENCES versions (tenant_id, version_id),
    FOREIGN KEY (tenant_id, original_id) REFERENCES originals (tenant_id, original_id)
);
ALTER TABLE version_sources ALTER COLUMN layout SET STORAGE EXTERNAL;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['originals', 'version_sources']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_tenant()) '
                       'WITH CHECK (tenant_id = app_tenant())', t);
    END LOOP;
END $$;

-- Read and append only: an original is immutable, so no UPDATE, DELETE or TRUNCATE grant.
GRANT SELECT, INSERT ON originals, version_sources TO stichtag_app;

-- The grants bind the application role; these triggers bind the owner too, so what was
-- uploaded (and what was extracted from it) can only ever be added to.
CREATE FUNCTION originals_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['originals', 'version_sources']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION originals_append_only()',
                       t || '_append_only', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION originals_append_only()',
                       t || '_no_truncate', t);
    END LOOP;
END $$;
