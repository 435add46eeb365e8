-- 0001: the bitemporal core. Every table carries tenant_id, and row-level security is
-- enabled AND forced from the first migration on, so that no read path is ever born
-- outside the tenant walls (DESIGN.md section 9). Objects are owned by stichtag_owner;
-- the server connects as stichtag_app, which owns nothing and cannot bypass RLS.

CREATE EXTENSION IF NOT EXISTS vector;

-- The tenant of the current transaction; NULL when unset, which matches no row.
CREATE FUNCTION app_tenant() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('app.tenant_id', true), '')::uuid $$;

CREATE TABLE tenants (
    tenant_id   uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    time_zone   text NOT NULL DEFAULT 'UTC',
    -- The tenant's transaction clock: writes lock this row, so transaction time is
    -- strictly increasing per tenant and outbox sequence order equals commit order.
    last_tx     timestamptz,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE api_keys (
    key_id       text PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants,
    secret_hash  bytea NOT NULL,
    scopes       text[] NOT NULL,
    clearance    smallint NOT NULL CHECK (clearance BETWEEN 0 AND 3),
    label        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    rotated_from text
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE TABLE documents (
    document_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants,
    key         text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (tenant_id, key)
);

-- Versions are stored as sequences of deduplicated blocks (paragraphs). A block's
-- sentences depend only on its own text (the segmenter is block-local), so unchanged
-- paragraphs of a new version cost a few bytes: 30 versions of a law stay close to
-- the size of the distinct text (DESIGN.md section 12, history cost).
CREATE TABLE blocks (
    block_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants,
    hash          bytea NOT NULL,           -- blake3(segmenter_id, media_type, text)
    text          text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('heading', 'text')),
    level         smallint NOT NULL,
    title         text,
    label         text,
    len_cp        integer NOT NULL,
    len_u16       integer NOT NULL,
    -- Sentence spans relative to the block start, in code points and UTF-16 units,
    -- and 16-byte blake3 sentence hashes concatenated (one per sentence).
    sent_starts   integer[] NOT NULL,
    sent_ends     integer[] NOT NULL,
    sent_u16_starts integer[] NOT NULL,
    sent_u16_ends integer[] NOT NULL,
    sent_hashes   bytea NOT NULL,
    UNIQUE (tenant_id, hash)
);

CREATE TABLE heading_paths (
    path_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants,
    hash       bytea NOT NULL,
    path       text[] NOT NULL,
    UNIQUE (tenant_id, hash)
);

CREATE TABLE versions (
    tenant_id     uuid NOT NULL REFERENCES tenants,
    version_id    text NOT NULL CHECK (version_id ~ '^b3:[0-9a-f]{64}$'),
    media_type    text NOT NULL,
    segmenter_id  text NOT NULL,
    block_ids     bigint[] NOT NULL,
    path_ids      bigint[] NOT NULL,
    len_cp        integer NOT NULL,
    len_u16       integer NOT NULL,
    n_sentences   integer NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, version_id),
    CHECK (cardinality(block_ids) = cardinality(path_ids))
);

CREATE TABLE assertions (
    assertion_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants,
    document_id     bigint NOT NULL REFERENCES documents,
    version_id      text NOT NULL,
    valid           tstzrange NOT NULL CHECK (
        NOT isempty(valid) AND NOT lower_inf(valid) AND lower_inc(valid) AND NOT upper_inc(valid)),
    -- Transaction time: the upper bound is set exactly once, when the assertion ends.
    tx              tstzrange NOT NULL CHECK (
        NOT lower_inf(tx) AND lower_inc(tx) AND NOT upper_inc(tx)),
    title           text,
    doc_class       text NOT NULL,
    confidentiality smallint NOT NULL CHECK (confidentiality BETWEEN 0 AND 3),
    provenance      jsonb NOT NULL,
    ended           text CHECK (ended IN ('superseded', 'retracted', 'corrected')),
    ended_reason    text,
    FOREIGN KEY (tenant_id, version_id) REFERENCES versions (tenant_id, version_id)
);
CREATE INDEX assertions_document ON assertions (document_id, (lower(tx)));
CREATE INDEX assertions_current ON assertions (document_id) WHERE upper_inf(tx);
CREATE INDEX assertions_asof ON assertions USING gist (tx, valid);
CREATE INDEX assertions_version ON assertions (tenant_id, version_id);

-- Derived indexes (tantivy, later embeddings) follow PostgreSQL through this outbox,
-- written in the same transaction as the assertion change (DESIGN.md section 5.4).
CREATE TABLE outbox (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants,
    kind          text NOT NULL CHECK (kind IN ('open', 'close')),
    assertion_id  bigint NOT NULL REFERENCES assertions,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outbox_tenant_seq ON outbox (tenant_id, seq);

-- Row-level security, enabled and forced on every table with tenant_id.
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
-- The CLI resolves a tenant by name (app.tenant_name) before it knows the id.
CREATE POLICY tenant_read ON tenants FOR SELECT
    USING (tenant_id = app_tenant() OR name = nullif(current_setting('app.tenant_name', true), ''));
CREATE POLICY tenant_write ON tenants FOR INSERT WITH CHECK (tenant_id = app_tenant());
CREATE POLICY tenant_update ON tenants FOR UPDATE
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
-- Authentication reads exactly the one key row whose public id the caller presented
-- (app.key_lookup), before the tenant is known; the secret is then compared in
-- constant time by the application.
CREATE POLICY key_lookup ON api_keys FOR SELECT
    USING (tenant_id = app_tenant() OR key_id = nullif(current_setting('app.key_lookup', true), ''));
CREATE POLICY key_write ON api_keys FOR INSERT WITH CHECK (tenant_id = app_tenant());
CREATE POLICY key_update ON api_keys FOR UPDATE
    USING (tenant_id = app_tenant()) WITH CHECK (tenant_id = app_tenant());

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['documents', 'blocks', 'heading_paths', 'versions', 'assertions', 'outbox']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_tenant()) '
                       'WITH CHECK (tenant_id = app_tenant())', t);
    END LOOP;
END $$;

-- The application role may read and append; it may update only what the rules
-- allow (closing transaction time, key revocation, the tenant clock) and delete nothing.
GRANT USAGE ON SCHEMA public TO stichtag_app;
GRANT SELECT, INSERT ON tenants, api_keys, documents, blocks, heading_paths, versions,
    assertions, outbox TO stichtag_app;
GRANT UPDATE (last_tx, time_zone) ON tenants TO stichtag_app;
GRANT UPDATE (revoked_at, expires_at) ON api_keys TO stichtag_app;
GRANT UPDATE (tx, ended, ended_reason) ON assertions TO stichtag_app;
GRANT EXECUTE ON FUNCTION app_tenant() TO stichtag_app;

-- Transaction time is append-only: an assertion's tx may only be closed once, from an
-- open upper bound to a finite one, never moved. Column grants already keep the app
-- role away from every other column; this trigger also binds the owner.
CREATE FUNCTION assertions_tx_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF lower(NEW.tx) <> lower(OLD.tx) OR NOT upper_inf(OLD.tx) OR upper_inf(NEW.tx)
       OR NEW.valid <> OLD.valid OR NEW.version_id <> OLD.version_id
       OR NEW.document_id <> OLD.document_id OR NEW.provenance <> OLD.provenance THEN
        RAISE EXCEPTION 'assertion % is immutable except for closing its transaction time',
            OLD.assertion_id USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER assertions_tx_guard BEFORE UPDATE ON assertions
    FOR EACH ROW EXECUTE FUNCTION assertions_tx_guard();
