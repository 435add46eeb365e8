-- name: passages_by_hash
-- Ids of already stored passages among the given hashes.
SELECT hash, passage_id FROM passages WHERE hash = ANY(%(hashes)s)

-- name: passages_next_id
-- The tenant's next passage id (drawn under the tenant's clock lock, as paths_next_id).
SELECT coalesce(max(passage_id), 0) + 1 FROM passages WHERE tenant_id = app_tenant()

-- name: passage_insert
-- Store a distinct passage of the current tenant, with an id drawn by passages_next_id;
-- its embedding follows asynchronously.
INSERT INTO passages (tenant_id, passage_id, hash, text)
VALUES (app_tenant(), %(passage_id)s, %(hash)s, %(text)s)

-- name: passages_pending
-- Passages of the current tenant still to embed with the given model, oldest first, after
-- a passage id (the indexer walks the backlog by id while its writer thread catches up).
SELECT passage_id, text FROM passages
WHERE (embedding IS NULL OR model_hash IS DISTINCT FROM %(model_hash)s)
  AND passage_id > %(after)s AND NOT erased
ORDER BY passage_id LIMIT %(limit)s

-- name: passage_embed
-- Store a passage's embedding and the model that computed it, once per model: the first
-- writer wins. int8 vectors depend slightly on their batch-mates, and a recorded run used
-- the stored (or its own, then stored) vector, so a later writer must not replace it. An
-- erased passage gets none (an embedder that read its text before the erasure is too late).
UPDATE passages SET embedding = %(embedding)s, model_hash = %(model_hash)s
WHERE passage_id = %(passage_id)s AND NOT erased
  AND (embedding IS NULL OR model_hash IS DISTINCT FROM %(model_hash)s)

-- name: outbox_after
-- Outbox rows of the current tenant after a sequence number, in commit order.
SELECT o.seq, o.kind, o.assertion_id, upper(a.tx) AS tx_to
FROM outbox o JOIN assertions a USING (assertion_id)
WHERE o.seq > %(after)s ORDER BY o.seq LIMIT %(limit)s

-- name: embedding_owner
-- Try to become the one process that embeds the tenant's passages: a session advisory
-- lock in the two-key space (class 0x5374 'St', then the tenant's hash; the migration
-- runner's key is in the one-key space), released on unlock or disconnect.
SELECT pg_try_advisory_lock(21364, hashtext(%(tenant)s))

-- name: embedding_owner_wait
-- Become the one process that embeds the tenant's passages, waiting for the current owner.
SELECT pg_advisory_lock(21364, hashtext(%(tenant)s))

-- name: embedding_owner_release
-- Stop owning the tenant's embedding work.
SELECT pg_advisory_unlock(21364, hashtext(%(tenant)s))

-- name: outbox_head
-- The newest outbox sequence of the current tenant (0 when empty).
SELECT coalesce(max(seq), 0) FROM outbox

-- name: outbox_positions
-- The newest outbox sequence, and the newest one readers wait for (not of a bulk write,
-- 0014_outbox_awaited.sql); each an index descent.
SELECT (SELECT coalesce(max(seq), 0) FROM outbox WHERE tenant_id = app_tenant()),
       (SELECT coalesce(max(seq), 0) FROM outbox WHERE tenant_id = app_tenant() AND awaited)

-- name: index_docs_for_assertions
-- Everything the lexical index stores for the passages of the given assertions.
SELECT a.assertion_id, (u.ord - 1)::int AS ordinal, u.passage_id, d.key AS document,
       a.version_id, u.start_cp, u.end_cp, p.text, hp.path, lower(a.valid) AS valid_from,
       upper(a.valid) AS valid_to, lower(a.tx) AS tx_from, upper(a.tx) AS tx_to,
       a.confidentiality
FROM assertions a
JOIN documents d USING (document_id)
JOIN versions v ON v.tenant_id = a.tenant_id AND v.version_id = a.version_id
CROSS JOIN LATERAL unnest(v.passage_ids, v.passage_starts, v.passage_ends, v.passage_path_ids)
    WITH ORDINALITY AS u(passage_id, start_cp, end_cp, path_id, ord)
JOIN passages p ON p.passage_id = u.passage_id
JOIN heading_paths hp ON hp.path_id = u.path_id
WHERE a.assertion_id = ANY(%(ids)s) AND NOT v.erased

-- name: visible_index_docs
-- Every (assertion, passage) the lexical index of the current tenant should hold.
SELECT a.assertion_id, (u.ord - 1)::int AS ordinal, upper(a.tx) AS tx_to
FROM assertions a
JOIN versions v ON v.tenant_id = a.tenant_id AND v.version_id = a.version_id
CROSS JOIN LATERAL unnest(v.passage_ids) WITH ORDINALITY AS u(passage_id, ord)
WHERE NOT isempty(a.tx) AND NOT v.erased

-- name: hits_for_keys
-- Hit details for (assertion_id, ordinal) pairs, re-checked against visibility. The array
-- elements are picked once (materialized), then joined by primary keys.
WITH k AS MATERIALIZED (
    SELECT a.assertion_id, k.ordinal, a.document_id, a.version_id, a.valid, a.doc_class,
           a.title, v.passage_ids[k.ordinal + 1] AS passage_id,
           v.passage_starts[k.ordinal + 1] AS start_cp, v.passage_ends[k.ordinal + 1] AS end_cp,
           v.passage_u16_starts[k.ordinal + 1] AS start_u16,
           v.passage_u16_ends[k.ordinal + 1] AS end_u16,
           v.passage_path_ids[k.ordinal + 1] AS path_id
    FROM unnest(%(assertion_ids)s::bigint[], %(ordinals)s::int[]) AS k(assertion_id, ordinal)
    JOIN assertions a ON a.assertion_id = k.assertion_id
    JOIN versions v ON v.tenant_id = a.tenant_id AND v.version_id = a.version_id
    WHERE visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)
      AND a.confidentiality <= %(clearance)s AND NOT v.erased)
SELECT k.assertion_id, k.ordinal, k.passage_id, d.key AS document, k.version_id, k.start_cp,
       k.end_cp, k.start_u16, k.end_u16, hp.path, lower(k.valid) AS valid_from,
       upper(k.valid) AS valid_to, k.doc_class, k.title, p.text AS passage_text
FROM k
JOIN documents d ON d.document_id = k.document_id
JOIN passages p ON p.passage_id = k.passage_id
JOIN heading_paths hp ON hp.path_id = k.path_id

-- name: vector_search
-- Nearest visible passages of the current model by cosine (HNSW, iterative scan).
WITH visible AS MATERIALIZED (
    SELECT DISTINCT u.passage_id
    FROM assertions a
    JOIN versions v ON v.tenant_id = a.tenant_id AND v.version_id = a.version_id
    CROSS JOIN LATERAL unnest(v.passage_ids) AS u(passage_id)
    WHERE visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)
      AND a.confidentiality <= %(clearance)s AND NOT v.erased)
SELECT p.passage_id, (p.embedding <=> %(query)s) AS distance
FROM passages p
WHERE p.embedding IS NOT NULL AND p.model_hash = %(model_hash)s
  AND p.passage_id IN (SELECT passage_id FROM visible)
ORDER BY p.embedding <=> %(query)s
LIMIT %(k)s

-- name: vector_search_exact
-- The same as vector_search by exhaustive scan (reference for recall; small tenants).
WITH visible AS MATERIALIZED (
    SELECT DISTINCT u.passage_id
    FROM assertions a
    JOIN versions v ON v.tenant_id = a.tenant_id AND v.version_id = a.version_id
    CROSS JOIN LATERAL unnest(v.passage_ids) AS u(passage_id)
    WHERE visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)
      AND a.confidentiality <= %(clearance)s AND NOT v.erased)
SELECT p.passage_id, (p.embedding <=> %(query)s) AS distance
FROM passages p JOIN visible USING (passage_id)
WHERE p.embedding IS NOT NULL AND p.model_hash = %(model_hash)s
ORDER BY (p.embedding <=> %(query)s) + 0
LIMIT %(k)s

-- name: visible_placements
-- Where visible passages sit: (assertion, ordinal) for each passage id at the as-of pair.
-- The given passages' placements are read first (one index descent each on
-- version_passages, 0015), then their versions and assertions by key: never an array or
-- an index probe per version in force.
WITH vp AS MATERIALIZED (
    SELECT tenant_id, passage_id, version_no, ordinal FROM version_passages
    WHERE passage_id = ANY(%(passage_ids)s))
SELECT vp.passage_id, a.assertion_id, vp.ordinal
FROM vp
JOIN versions v ON v.tenant_id = vp.tenant_id AND v.version_no = vp.version_no
JOIN assertions a ON a.tenant_id = v.tenant_id AND a.version_id = v.version_id
WHERE visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)
  AND a.confidentiality <= %(clearance)s AND NOT v.erased

-- name: run_insert
-- Persist a search or answer run with its full record.
INSERT INTO runs (run_id, tenant_id, kind, key_id, record)
VALUES (%(run_id)s, app_tenant(), %(kind)s, %(key_id)s, %(record)s)

-- name: run_get
-- One run of the current tenant, with its sealed texts (see log_records).
SELECT r.run_id, r.kind, r.key_id, r.created_at, r.record, (SELECT jsonb_object_agg(encode(t.commitment, 'hex'),
                          jsonb_build_object('salt', encode(t.salt, 'hex'), 'text', t.text))
        FROM run_texts t WHERE t.tenant_id = r.tenant_id AND t.run_id = r.run_id) AS texts
FROM runs r WHERE r.run_id = %(run_id)s

-- name: passages_pending_count
-- How many passages of the current tenant still lack an embedding for the model.
SELECT count(*) FROM passages
WHERE (embedding IS NULL OR model_hash IS DISTINCT FROM %(model_hash)s) AND NOT erased

-- name: visible_placement_count
-- How many passage placements are visible at the as-of pair, and how many passages the
-- tenant has (ids are the tenant's own, 1..n: one index descent); they choose the plan.
SELECT coalesce(sum(v.n_passages), 0),
       (SELECT coalesce(max(passage_id), 0) FROM passages WHERE tenant_id = app_tenant())
FROM assertions a
JOIN versions v ON v.tenant_id = a.tenant_id AND v.version_id = a.version_id
WHERE visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)
  AND a.confidentiality <= %(clearance)s AND NOT v.erased

-- name: vector_search_hnsw
-- Nearest visible passages with the HNSW index driving (large visible sets): each index
-- candidate is checked for visibility through its placements (an index descent on
-- version_passages, then the version and its assertions by key); the iterative scan
-- continues until k rows pass.
SELECT p.passage_id, (p.embedding <=> %(query)s) AS distance
FROM passages p
WHERE p.embedding IS NOT NULL AND p.model_hash = %(model_hash)s AND EXISTS (
    SELECT 1 FROM version_passages vp
    JOIN versions v ON v.tenant_id = vp.tenant_id AND v.version_no = vp.version_no
    JOIN assertions a ON a.tenant_id = v.tenant_id AND a.version_id = v.version_id
    WHERE vp.passage_id = p.passage_id AND NOT v.erased
      AND visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)
      AND a.confidentiality <= %(clearance)s
    OFFSET 0)  -- a subplan per candidate: never a join that reads every visible placement
ORDER BY p.embedding <=> %(query)s
LIMIT %(k)s

-- name: index_backlog
-- The tenant's outbox head, and how many of its passages visible at the as-of pair have no
-- vector yet, counted up to %(cap)s. The walk starts from the pending passages
-- (passages_pending, a partial index: nothing to walk when none is pending, whatever other
-- tenants' backlogs are) and asks of each whether a visible version holds it
-- (version_passages, one descent per passage): its cost follows the backlog, capped, not
-- the size of the versions in force. Unnesting the visible versions' passage arrays
-- instead took minutes per read with one 60,000-section version pending.
SELECT (SELECT coalesce(max(seq), 0) FROM outbox),
       (SELECT count(*) FROM (
            SELECT 1 FROM passages p
            WHERE p.embedding IS NULL AND NOT p.erased
              AND EXISTS (
                  SELECT 1
                  FROM version_passages vp
                  JOIN versions v ON v.tenant_id = vp.tenant_id AND v.version_no = vp.version_no
                  JOIN assertions a ON a.tenant_id = v.tenant_id AND a.version_id = v.version_id
                  WHERE vp.tenant_id = p.tenant_id AND vp.passage_id = p.passage_id
                    AND visible_at(a.tx, a.valid, %(known_at)s::timestamptz,
                                   %(valid_at)s::timestamptz)
                    AND a.confidentiality <= %(clearance)s AND NOT v.erased)
            LIMIT %(cap)s) pending)
