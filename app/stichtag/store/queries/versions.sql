-- name: version_get
-- The stored row of a version, regardless of clearance (write path only).
SELECT version_id, media_type, segmenter_id, len_cp, len_u16, n_sentences, created_at
FROM versions WHERE version_id = %(version_id)s

-- name: version_insert
-- Store a version as its sequence of block ids and heading-path ids. Its number
-- (version_passages' compact reference, 0015) is the tenant's next, drawn under the
-- tenant's clock lock like passage ids; the insert trigger derives its placements.
INSERT INTO versions (tenant_id, version_id, version_no, media_type, segmenter_id, block_ids,
                      path_ids, len_cp, len_u16, n_sentences, passage_ids, passage_starts,
                      passage_ends, passage_u16_starts, passage_u16_ends, passage_path_ids,
                      block_starts, block_u16_starts, block_sentence_starts)
VALUES (app_tenant(), %(version_id)s,
        (SELECT coalesce(max(version_no), 0) + 1 FROM versions WHERE tenant_id = app_tenant()),
        %(media_type)s, %(segmenter_id)s, %(block_ids)s,
        %(path_ids)s, %(len_cp)s, %(len_u16)s, %(n_sentences)s, %(passage_ids)s,
        %(passage_starts)s, %(passage_ends)s, %(passage_u16_starts)s, %(passage_u16_ends)s,
        %(passage_path_ids)s, %(block_starts)s, %(block_u16_starts)s,
        %(block_sentence_starts)s)

-- name: blocks_by_hash
-- Ids of already stored blocks among the given hashes.
SELECT hash, block_id FROM blocks WHERE hash = ANY(%(hashes)s)

-- name: paths_by_hash
-- Ids of already stored heading paths among the given hashes.
SELECT hash, path_id FROM heading_paths WHERE hash = ANY(%(hashes)s)

-- name: paths_next_id
-- The tenant's next heading-path id (migrations/0010: the writer holds the tenant's clock
-- lock, so the ids from here up are free until it commits).
SELECT coalesce(max(path_id), 0) + 1 FROM heading_paths WHERE tenant_id = app_tenant()

-- name: path_insert
-- Store a heading path once per tenant, with an id drawn by paths_next_id.
INSERT INTO heading_paths (tenant_id, path_id, hash, path)
VALUES (app_tenant(), %(path_id)s, %(hash)s, %(path)s)

-- name: version_blocks
-- The blocks of a version in order, with their heading paths.
SELECT b.text, b.kind, b.len_cp, b.len_u16, b.sent_starts, b.sent_ends, b.sent_u16_starts,
       b.sent_u16_ends, b.sent_hashes, p.path
FROM versions v
CROSS JOIN LATERAL unnest(v.block_ids, v.path_ids) WITH ORDINALITY AS u(block_id, path_id, ord)
JOIN blocks b ON b.block_id = u.block_id
JOIN heading_paths p ON p.path_id = u.path_id
WHERE v.version_id = %(version_id)s
ORDER BY u.ord

-- name: blocks_next_id
-- The tenant's next block id (drawn under the tenant's clock lock, as paths_next_id).
SELECT coalesce(max(block_id), 0) + 1 FROM blocks WHERE tenant_id = app_tenant()

-- name: block_insert
-- Store a new block of the current tenant (deduplicated by hash), with an id drawn by
-- blocks_next_id.
INSERT INTO blocks (tenant_id, block_id, hash, text, kind, level, title, label, len_cp, len_u16,
                    sent_starts, sent_ends, sent_u16_starts, sent_u16_ends, sent_hashes)
VALUES (app_tenant(), %(block_id)s, %(hash)s, %(text)s, %(kind)s, %(level)s, %(title)s, %(label)s,
        %(len_cp)s, %(len_u16)s, %(sent_starts)s, %(sent_ends)s, %(sent_u16_starts)s,
        %(sent_u16_ends)s, %(sent_hashes)s)

-- name: version_layouts
-- Where each block of some versions starts (migration 0012) and which blocks and heading
-- paths they are, for the versions the key may read (an assertion within the clearance,
-- not erased); the arrays only for the versions in %(wanted)s, the others are checked.
SELECT v.version_id, v.len_cp,
       CASE WHEN v.version_id = ANY(%(wanted)s) THEN v.block_ids END AS block_ids,
       CASE WHEN v.version_id = ANY(%(wanted)s) THEN v.path_ids END AS path_ids,
       CASE WHEN v.version_id = ANY(%(wanted)s) THEN v.block_starts END AS block_starts,
       CASE WHEN v.version_id = ANY(%(wanted)s) THEN v.block_u16_starts END AS block_u16_starts,
       CASE WHEN v.version_id = ANY(%(wanted)s) THEN v.block_sentence_starts END
           AS block_sentence_starts
FROM versions v
WHERE v.version_id = ANY(%(ids)s) AND NOT v.erased AND EXISTS (
    SELECT 1 FROM assertions a WHERE a.tenant_id = v.tenant_id AND a.version_id = v.version_id
      AND a.confidentiality <= %(clearance)s)

-- name: blocks_with_paths
-- Blocks and heading paths by id, pairwise (the blocks an excerpt needs).
SELECT u.block_id, u.path_id, b.text, b.sent_starts, b.sent_ends, b.sent_u16_starts,
       b.sent_u16_ends, b.sent_hashes, p.path
FROM unnest(%(block_ids)s::bigint[], %(path_ids)s::bigint[]) AS u(block_id, path_id)
JOIN blocks b ON b.block_id = u.block_id
JOIN heading_paths p ON p.path_id = u.path_id

-- name: version_is_erased
-- Whether a stored version was erased (its text is gone; it is never stored again).
SELECT erased FROM versions WHERE version_id = %(version_id)s
