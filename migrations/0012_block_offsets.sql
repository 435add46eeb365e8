-- 0012: where each block of a version starts (issue #19, item 2).
--
-- An answer cuts its evidence from the sentences of a few passages and 32 code points
-- around each. Until now it read the whole version for that (all blocks, every sentence
-- assembled) whenever the version was not cached: for a long law that was the answer's
-- p95 tail. With the absolute start of every block stored on the version (code points,
-- UTF-16 units, ordinal of its first sentence), the blocks around a window are found on
-- the version row itself, and only those are read (stichtag/store/queries/versions.sql,
-- version_excerpts). The arrays run parallel to block_ids; versions stay immutable (the
-- application role may still only SELECT and INSERT them).
--
-- Number 0011 belongs to another branch; gaps are allowed (stichtag/store/migrate.py).

ALTER TABLE versions ADD COLUMN block_starts integer[],
                     ADD COLUMN block_u16_starts integer[],
                     ADD COLUMN block_sentence_starts integer[];

-- The versions stored so far, computed from their blocks. Row-level security is forced
-- on the owner too, so the force is lifted for this one statement inside the migration's
-- transaction and put back before the transaction ends (the application role never sees
-- the tables without it).
ALTER TABLE versions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE blocks NO FORCE ROW LEVEL SECURITY;
UPDATE versions v
SET block_starts = o.cp, block_u16_starts = o.u16, block_sentence_starts = o.sent
FROM (
    SELECT l.tenant_id, l.version_id, array_agg(l.cp0 ORDER BY l.ord) AS cp,
           array_agg(l.u0 ORDER BY l.ord) AS u16, array_agg(l.s0 ORDER BY l.ord) AS sent
    FROM (
        SELECT v.tenant_id, v.version_id, u.ord,
               (sum(b.len_cp) OVER w - b.len_cp)::integer AS cp0,
               (sum(b.len_u16) OVER w - b.len_u16)::integer AS u0,
               (sum(cardinality(b.sent_starts)) OVER w
                - cardinality(b.sent_starts))::integer AS s0
        FROM versions v
        CROSS JOIN LATERAL unnest(v.block_ids) WITH ORDINALITY AS u(block_id, ord)
        JOIN blocks b ON b.tenant_id = v.tenant_id AND b.block_id = u.block_id
        WINDOW w AS (PARTITION BY v.tenant_id, v.version_id ORDER BY u.ord)
    ) l
    GROUP BY l.tenant_id, l.version_id
) o
WHERE v.tenant_id = o.tenant_id AND v.version_id = o.version_id;
UPDATE versions SET block_starts = '{}', block_u16_starts = '{}', block_sentence_starts = '{}'
WHERE block_starts IS NULL;  -- a version without blocks (the empty text)
ALTER TABLE versions FORCE ROW LEVEL SECURITY;
ALTER TABLE blocks FORCE ROW LEVEL SECURITY;

ALTER TABLE versions ALTER COLUMN block_starts SET NOT NULL,
                     ALTER COLUMN block_u16_starts SET NOT NULL,
                     ALTER COLUMN block_sentence_starts SET NOT NULL,
                     ADD CONSTRAINT versions_block_starts_parallel CHECK (
                         cardinality(block_starts) = cardinality(block_ids)
                         AND cardinality(block_u16_starts) = cardinality(block_ids)
                         AND cardinality(block_sentence_starts) = cardinality(block_ids));
