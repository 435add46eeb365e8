-- 0015: placements as an index (issue #19, item 1).
--
-- Which versions hold a passage was answered from the passage arrays on the version row
-- (0002) through a GIN index (0005). The planner never used that index: it cannot price
-- the detoasting of an array, so it checked every HNSW candidate against every visible
-- version's array, and `visible_placements` unnested every visible array, on every
-- query. Profiled on bench_scale's 100k tenant (EXPLAIN ANALYZE, docs/benchmarks.md):
-- 64 visible versions detoasted per statement, 30 ms for the HNSW search and 25 ms for
-- the placements at the current time, ten times that at 1M passages.
--
-- `version_passages` holds one row per (passage, version, ordinal) with a btree on the
-- passage: a candidate's versions are one index descent, independent of how many
-- versions are in force. The arrays stay the source of truth (sentences, offsets and
-- the lexical index read them); this table is derived from them by a trigger in the
-- transaction that stores the version, so it cannot drift, and it is append-only like
-- the version it mirrors. An erased version keeps its rows (ids only, no content): every
-- read joins the version and filters on `erased`.
--
-- The version is referenced by a compact number instead of its 67-character content
-- address, which would make every row (and index entry) about twice as large. Like every
-- id here it is the tenant's own (no database-wide sequence, 0010): version_insert draws
-- max + 1 under the tenant's clock lock, as it does for passages and heading paths.

ALTER TABLE versions ADD COLUMN version_no bigint;
-- The vector plan's choice counts visible placements; cardinality() of a stored array
-- detoasts it, a stored count is read with the row.
ALTER TABLE versions ADD COLUMN n_passages integer
    GENERATED ALWAYS AS (cardinality(passage_ids)) STORED;

CREATE TABLE version_passages (
    tenant_id   uuid NOT NULL,
    passage_id  bigint NOT NULL,
    version_no  bigint NOT NULL,
    ordinal     integer NOT NULL,
    PRIMARY KEY (tenant_id, passage_id, version_no, ordinal)
);

-- The versions stored so far (row-level security is lifted from the owner for this one
-- statement and put back inside the migration's transaction, as in 0012).
ALTER TABLE versions NO FORCE ROW LEVEL SECURITY;
UPDATE versions v SET version_no = n.no
FROM (SELECT tenant_id, version_id,
             row_number() OVER (PARTITION BY tenant_id ORDER BY created_at, version_id) AS no
      FROM versions) n
WHERE v.tenant_id = n.tenant_id AND v.version_id = n.version_id;
INSERT INTO version_passages (tenant_id, passage_id, version_no, ordinal)
SELECT v.tenant_id, u.passage_id, v.version_no, (u.ord - 1)::int
FROM versions v CROSS JOIN LATERAL unnest(v.passage_ids) WITH ORDINALITY AS u(passage_id, ord);
ALTER TABLE versions FORCE ROW LEVEL SECURITY;
ALTER TABLE versions ALTER COLUMN version_no SET NOT NULL;
CREATE UNIQUE INDEX versions_no ON versions (tenant_id, version_no);

ALTER TABLE version_passages ENABLE ROW LEVEL SECURITY;
ALTER TABLE version_passages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON version_passages USING (tenant_id = app_tenant())
    WITH CHECK (tenant_id = app_tenant());
-- Written only by the trigger below, in the version's own transaction (as the role that
-- inserts the version, under its tenant setting); never changed.
GRANT SELECT, INSERT ON version_passages TO stichtag_app;

CREATE FUNCTION version_passages_derive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO version_passages (tenant_id, passage_id, version_no, ordinal)
    SELECT NEW.tenant_id, u.passage_id, NEW.version_no, (u.ord - 1)::int
    FROM unnest(NEW.passage_ids) WITH ORDINALITY AS u(passage_id, ord);
    RETURN NULL;
END $$;
CREATE TRIGGER versions_derive_passages AFTER INSERT ON versions
    FOR EACH ROW EXECUTE FUNCTION version_passages_derive();

CREATE TRIGGER version_passages_append_only BEFORE UPDATE OR DELETE ON version_passages
    FOR EACH ROW EXECUTE FUNCTION originals_append_only();
CREATE TRIGGER version_passages_no_truncate BEFORE TRUNCATE ON version_passages
    FOR EACH STATEMENT EXECUTE FUNCTION originals_append_only();
