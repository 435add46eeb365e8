-- name: passages_by_hash
-- Ids of already stored passages among the given hashes.
SELECT hash, passage_id FROM passages WHERE hash = ANY(%(hashes)s)

-- name: passage_insert
-- Store a distinct passage of the current tenant; its embedding follows asynchronously.
INSERT INTO passages (tenant_id, hash, text) VALUES (app_tenant(), %(hash)s, %(text)s)

-- name: version_passage_insert
-- Place a passage in a version (after the version row, in the same transaction).
INSERT INTO version_passages (tenant_id, version_id, ordinal, passage_id, first_sentence,
                              n_sentences, start_cp, end_cp, start_u16, end_u16, path)
VALUES (app_tenant(), %(version_id)s, %(ordinal)s, %(passage_id)s, %(first_sentence)s,
        %(n_sentences)s, %(start_cp)s, %(end_cp)s, %(start_u16)s, %(end_u16)s, %(path)s)

-- name: passages_pending
-- Passages of the current tenant still to embed with the given model, oldest first.
SELECT passage_id, text FROM passages
WHERE embedding IS NULL OR model_hash IS DISTINCT FROM %(model_hash)s
ORDER BY passage_id LIMIT %(limit)s

-- name: passage_embed
-- Store a passage's embedding and the model that computed it.
UPDATE passages SET embedding = %(embedding)s, model_hash = %(model_hash)s
WHERE passage_id = %(passage_id)s

-- name: outbox_after
-- Outbox rows of the current tenant after a sequence number, in commit order.
SELECT o.seq, o.kind, o.assertion_id, upper(a.tx) AS tx_to
FROM outbox o JOIN assertions a USING (assertion_id)
WHERE o.seq > %(after)s ORDER BY o.seq LIMIT %(limit)s

-- name: outbox_head
-- The newest outbox sequence of the current tenant (0 when empty).
SELECT coalesce(max(seq), 0) FROM outbox

-- name: index_docs_for_assertions
-- Everything the lexical index stores for the passages of the given assertions.
SELECT a.assertion_id, vp.ordinal, vp.passage_id, d.key AS document, a.version_id,
       vp.start_cp, vp.end_cp, p.text, vp.path, lower(a.valid) AS valid_from,
       upper(a.valid) AS valid_to, lower(a.tx) AS tx_from, upper(a.tx) AS tx_to,
       a.confidentiality
FROM assertions a
JOIN documents d USING (document_id)
JOIN version_passages vp ON vp.tenant_id = a.tenant_id AND vp.version_id = a.version_id
JOIN passages p ON p.passage_id = vp.passage_id
WHERE a.assertion_id = ANY(%(ids)s)

-- name: visible_index_docs
-- Every (assertion, passage) the lexical index of the current tenant should hold.
SELECT a.assertion_id, vp.ordinal, upper(a.tx) AS tx_to
FROM assertions a
JOIN version_passages vp ON vp.tenant_id = a.tenant_id AND vp.version_id = a.version_id
WHERE NOT isempty(a.tx)

-- name: hits_for_keys
-- Hit details for (assertion_id, ordinal) pairs, re-checked against visibility.
SELECT a.assertion_id, vp.ordinal, vp.passage_id, d.key AS document, a.version_id,
       vp.start_cp, vp.end_cp, vp.start_u16, vp.end_u16, vp.path, vp.first_sentence,
       vp.n_sentences, lower(a.valid) AS valid_from, upper(a.valid) AS valid_to,
       a.doc_class, a.title, p.text AS passage_text
FROM unnest(%(assertion_ids)s::bigint[], %(ordinals)s::int[]) AS k(assertion_id, ordinal)
JOIN assertions a ON a.assertion_id = k.assertion_id
JOIN documents d ON d.document_id = a.document_id
JOIN version_passages vp ON vp.tenant_id = a.tenant_id AND vp.version_id = a.version_id
                        AND vp.ordinal = k.ordinal
JOIN passages p ON p.passage_id = vp.passage_id
WHERE a.tx @> %(known_at)s::timestamptz AND a.valid @> %(valid_at)s::timestamptz
  AND a.confidentiality <= %(clearance)s

-- name: vector_search
-- Nearest visible passages by cosine distance (HNSW with pgvector iterative scan).
SELECT p.passage_id, (p.embedding <=> %(query)s) AS distance
FROM passages p
WHERE p.embedding IS NOT NULL AND EXISTS (
    SELECT 1 FROM version_passages vp JOIN assertions a
      ON a.tenant_id = vp.tenant_id AND a.version_id = vp.version_id
    WHERE vp.passage_id = p.passage_id
      AND a.tx @> %(known_at)s::timestamptz AND a.valid @> %(valid_at)s::timestamptz
      AND a.confidentiality <= %(clearance)s)
ORDER BY p.embedding <=> %(query)s
LIMIT %(k)s

-- name: vector_search_exact
-- The same as vector_search by exhaustive scan (reference for recall; small tenants).
SELECT p.passage_id, (p.embedding <=> %(query)s) AS distance
FROM passages p
WHERE p.embedding IS NOT NULL AND EXISTS (
    SELECT 1 FROM version_passages vp JOIN assertions a
      ON a.tenant_id = vp.tenant_id AND a.version_id = vp.version_id
    WHERE vp.passage_id = p.passage_id
      AND a.tx @> %(known_at)s::timestamptz AND a.valid @> %(valid_at)s::timestamptz
      AND a.confidentiality <= %(clearance)s)
ORDER BY (p.embedding <=> %(query)s) + 0
LIMIT %(k)s

-- name: visible_placements
-- Where visible passages sit: (assertion, ordinal) for each passage id at the as-of pair.
SELECT vp.passage_id, a.assertion_id, vp.ordinal
FROM version_passages vp JOIN assertions a
  ON a.tenant_id = vp.tenant_id AND a.version_id = vp.version_id
WHERE vp.passage_id = ANY(%(passage_ids)s)
  AND a.tx @> %(known_at)s::timestamptz AND a.valid @> %(valid_at)s::timestamptz
  AND a.confidentiality <= %(clearance)s

-- name: run_insert
-- Persist a search or answer run with its full record.
INSERT INTO runs (run_id, tenant_id, kind, key_id, record)
VALUES (%(run_id)s, app_tenant(), %(kind)s, %(key_id)s, %(record)s)

-- name: run_get
-- One run of the current tenant.
SELECT run_id, kind, key_id, created_at, record FROM runs WHERE run_id = %(run_id)s

-- name: passages_pending_count
-- How many passages of the current tenant still lack an embedding for the model.
SELECT count(*) FROM passages WHERE embedding IS NULL OR model_hash IS DISTINCT FROM %(model_hash)s
