-- name: thresholds_current
-- The tenant's newest threshold version (none: the documented defaults apply).
SELECT version, theta_rel, tau, calibration, rationale, set_by, recorded_at, theta_scope,
       relevance
FROM thresholds ORDER BY version DESC LIMIT 1

-- name: thresholds_history
-- Every threshold version of the tenant, oldest first.
SELECT version, theta_rel, tau, calibration, rationale, set_by, recorded_at, theta_scope,
       relevance
FROM thresholds ORDER BY version

-- name: thresholds_insert
-- Record a new threshold version (the next number; the tenant clock lock serializes).
INSERT INTO thresholds (tenant_id, version, theta_rel, tau, calibration, rationale, set_by,
                        theta_scope, relevance)
SELECT app_tenant(), coalesce(max(version), 0) + 1, %(theta_rel)s, %(tau)s, %(calibration)s,
       %(rationale)s, %(set_by)s, %(theta_scope)s, %(relevance)s
FROM thresholds
RETURNING version, theta_rel, tau, calibration, rationale, set_by, recorded_at, theta_scope,
          relevance

-- name: passage_vectors
-- Stored embeddings of the given passages (NULL while pending).
SELECT passage_id, embedding, model_hash FROM passages WHERE passage_id = ANY(%(ids)s)

-- name: document_current_version
-- The version of a document in force now as known now, within the clearance.
SELECT a.version_id FROM assertions a JOIN documents d USING (document_id)
WHERE d.key = %(key)s AND upper_inf(a.tx) AND a.valid @> %(now)s::timestamptz
  AND a.confidentiality <= %(clearance)s

-- name: version_document
-- The document keys a version is asserted for, within the clearance.
SELECT DISTINCT d.key FROM assertions a JOIN documents d USING (document_id)
WHERE a.version_id = %(version_id)s AND a.confidentiality <= %(clearance)s
ORDER BY d.key

-- name: log_head_lock
-- The tenant's log head and its signed checkpoint, locked: appends are serialized (gapless).
SELECT size, root, frontier, checkpoint FROM log_heads WHERE tenant_id = app_tenant() FOR UPDATE

-- name: log_head_insert
-- Start a tenant's log (empty tree).
INSERT INTO log_heads (tenant_id, size, root, frontier, checkpoint)
VALUES (app_tenant(), 0, %(root)s, '{}', '')
ON CONFLICT (tenant_id) DO NOTHING

-- name: log_head_update
-- Advance the tenant's log head after an append.
UPDATE log_heads SET size = %(size)s, root = %(root)s, frontier = %(frontier)s,
                     checkpoint = %(checkpoint)s
WHERE tenant_id = app_tenant()

-- name: log_head
-- The tenant's current log head with its signed checkpoint.
SELECT size, root, frontier, checkpoint FROM log_heads WHERE tenant_id = app_tenant()

-- name: run_log_insert
-- Persist a run as the next leaf of the tenant's log.
INSERT INTO runs (run_id, tenant_id, kind, key_id, record, seq, leaf_hash)
VALUES (%(run_id)s, app_tenant(), %(kind)s, %(key_id)s, %(record)s, %(seq)s, %(leaf)s)

-- name: log_leaves
-- Leaf hashes of the tenant's log in order, up to a size.
SELECT leaf_hash FROM runs WHERE seq IS NOT NULL AND seq < %(size)s ORDER BY seq

-- name: run_texts_insert
-- Keep the sealed texts of a run, outside its leaf (0017), in one statement (one round
-- trip per answer): a JSON array of {c: commitment hex, s: salt hex, t: text, v: [versions]}.
INSERT INTO run_texts (tenant_id, run_id, commitment, salt, text, version_ids)
SELECT app_tenant(), %(run_id)s, decode(e ->> 'c', 'hex'), decode(e ->> 's', 'hex'), e ->> 't',
       ARRAY(SELECT jsonb_array_elements_text(e -> 'v'))
FROM jsonb_array_elements(%(texts)s) AS e

-- name: log_records
-- The records of the tenant's log in order, up to a size (for export), each with the
-- sealed texts still held for it (commitment hex -> salt hex and text).
SELECT r.seq, r.record, (SELECT jsonb_object_agg(encode(t.commitment, 'hex'),
                          jsonb_build_object('salt', encode(t.salt, 'hex'), 'text', t.text))
        FROM run_texts t WHERE t.tenant_id = r.tenant_id AND t.run_id = r.run_id) AS texts
FROM runs r WHERE r.seq IS NOT NULL AND r.seq < %(size)s ORDER BY r.seq

-- name: answer_runs
-- The tenant's recorded answer runs, oldest first.
SELECT r.run_id, r.kind, r.key_id, r.created_at, r.record, (SELECT jsonb_object_agg(encode(t.commitment, 'hex'),
                          jsonb_build_object('salt', encode(t.salt, 'hex'), 'text', t.text))
        FROM run_texts t WHERE t.tenant_id = r.tenant_id AND t.run_id = r.run_id) AS texts
FROM runs r
WHERE r.kind = 'answer' AND r.created_at >= %(since)s
ORDER BY r.seq

-- name: abstained_runs
-- Recent answer runs that abstained with one of the given reasons, or were answered with
-- a recorded gap (a list answer that named nothing: result.gap), newest first; only the
-- parts the gap report reads (question, reason, clearance), not candidates or exchanges.
SELECT run_id, kind, key_id, created_at,
       jsonb_build_object('request', record -> 'request', 'clearance', record -> 'clearance',
                          'result', jsonb_build_object('reason', to_jsonb(COALESCE(
                              record #>> '{result,reason}', record #>> '{result,gap}'))))
         AS record
FROM runs
WHERE kind = 'answer' AND created_at >= %(since)s
  AND COALESCE(record #>> '{result,reason}', record #>> '{result,gap}') = ANY(%(reasons)s)
ORDER BY created_at DESC
LIMIT %(limit)s
