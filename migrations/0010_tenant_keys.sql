-- 0010: keys that belong to one tenant (issue #16, items 2 and 4), and the observation
-- hand of the tenant's transaction clock (item 1).
--
-- Per-tenant identifiers: assertion ids, outbox positions (the lexical index's applied
-- sequence) and the ids of documents, blocks, heading paths and passages came from
-- database-wide identity sequences, so a tenant that watched its own ids could count
-- every other tenant's writes. From here on each is numbered per tenant: the next id is
-- the tenant's largest plus one, drawn by the insert itself (stichtag/store/queries). Every
-- insert into these tables happens inside a write, which holds the tenant's clock row
-- (tenants.last_tx) FOR UPDATE, so two writes of one tenant never draw the same number;
-- if one ever did, the primary key below refuses the second insert (fail closed). Ids
-- stored before this migration keep their values: they are unique per tenant, the
-- derived tantivy indexes hold them, and the next number continues above the largest.
--
-- Citus-ready keys: every primary key, unique constraint and foreign key of a tenant
-- table contains tenant_id, and every foreign key maps tenant_id to tenant_id, so a
-- distribution by tenant_id can enforce them on one shard and no reference crosses
-- tenants. tenants and api_keys are the two exceptions by design: they become Citus
-- reference tables (a tenant name and a key id are looked up before the tenant is known;
-- docs/operations.md, "Scale-out path"). tests/integration/test_tenancy_catalog.py
-- enforces all of this on the migrated schema.

-- The observation hand of the tenant's transaction clock (docs/architecture.md §3.6): the
-- largest known_at of a recorded run. An admin import must lie strictly after it (a run
-- has seen that past) and not before last_tx (the latest write; the same instant is
-- allowed, as an archive records several documents at one instant). A recorded run sets
-- it before it reads, with the row lock that also waits for a write in flight.
ALTER TABLE tenants ADD COLUMN observed_to timestamptz;
GRANT UPDATE (observed_to) ON tenants TO stichtag_app;

-- Foreign keys onto single-column keys go first; they return composite below.
ALTER TABLE assertions DROP CONSTRAINT assertions_document_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT outbox_assertion_id_fkey;
ALTER TABLE review_items DROP CONSTRAINT review_items_run_id_fkey;
ALTER TABLE review_verdicts DROP CONSTRAINT review_verdicts_verdict_id_fkey;
ALTER TABLE review_items DROP CONSTRAINT review_items_tenant_id_sample_id_fkey;

-- No global sequence in a key: the identity columns become plain columns the inserts fill.
ALTER TABLE documents ALTER COLUMN document_id DROP IDENTITY;
ALTER TABLE blocks ALTER COLUMN block_id DROP IDENTITY;
ALTER TABLE heading_paths ALTER COLUMN path_id DROP IDENTITY;
ALTER TABLE assertions ALTER COLUMN assertion_id DROP IDENTITY;
ALTER TABLE outbox ALTER COLUMN seq DROP IDENTITY;
ALTER TABLE passages ALTER COLUMN passage_id DROP IDENTITY;

-- Primary keys with tenant_id first: the per-tenant "largest plus one" is one step down
-- this index, and a tenant's rows lie together.
ALTER TABLE documents DROP CONSTRAINT documents_pkey,
    ADD CONSTRAINT documents_pkey PRIMARY KEY (tenant_id, document_id);
ALTER TABLE blocks DROP CONSTRAINT blocks_pkey,
    ADD CONSTRAINT blocks_pkey PRIMARY KEY (tenant_id, block_id);
ALTER TABLE heading_paths DROP CONSTRAINT heading_paths_pkey,
    ADD CONSTRAINT heading_paths_pkey PRIMARY KEY (tenant_id, path_id);
ALTER TABLE assertions DROP CONSTRAINT assertions_pkey,
    ADD CONSTRAINT assertions_pkey PRIMARY KEY (tenant_id, assertion_id);
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey,
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (tenant_id, seq);
ALTER TABLE passages DROP CONSTRAINT passages_pkey,
    ADD CONSTRAINT passages_pkey PRIMARY KEY (tenant_id, passage_id);
ALTER TABLE runs DROP CONSTRAINT runs_pkey,
    ADD CONSTRAINT runs_pkey PRIMARY KEY (tenant_id, run_id);
-- review_samples had both PRIMARY KEY (sample_id) and UNIQUE (tenant_id, sample_id); the
-- composite one becomes the key.
ALTER TABLE review_samples DROP CONSTRAINT review_samples_pkey,
    DROP CONSTRAINT review_samples_tenant_id_sample_id_key,
    ADD CONSTRAINT review_samples_pkey PRIMARY KEY (tenant_id, sample_id);
ALTER TABLE review_verdicts DROP CONSTRAINT review_verdicts_pkey,
    ADD CONSTRAINT review_verdicts_pkey PRIMARY KEY (tenant_id, verdict_id);

-- The outbox's (tenant_id, seq) index is now its primary key.
DROP INDEX outbox_tenant_seq;
-- The document indexes lead with tenant_id: document ids repeat across tenants now.
DROP INDEX assertions_document;
CREATE INDEX assertions_document ON assertions (tenant_id, document_id, (lower(tx)));
DROP INDEX assertions_current;
CREATE INDEX assertions_current ON assertions (tenant_id, document_id) WHERE upper_inf(tx);

-- The foreign keys again, each within one tenant.
ALTER TABLE assertions ADD CONSTRAINT assertions_document_fkey
    FOREIGN KEY (tenant_id, document_id) REFERENCES documents (tenant_id, document_id);
ALTER TABLE outbox ADD CONSTRAINT outbox_assertion_fkey
    FOREIGN KEY (tenant_id, assertion_id) REFERENCES assertions (tenant_id, assertion_id);
ALTER TABLE review_items ADD CONSTRAINT review_items_run_fkey
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, run_id);
ALTER TABLE review_items ADD CONSTRAINT review_items_sample_fkey
    FOREIGN KEY (tenant_id, sample_id) REFERENCES review_samples (tenant_id, sample_id);
ALTER TABLE review_verdicts ADD CONSTRAINT review_verdicts_run_fkey
    FOREIGN KEY (tenant_id, verdict_id) REFERENCES runs (tenant_id, run_id);
