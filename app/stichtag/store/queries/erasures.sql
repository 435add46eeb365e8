-- name: erasure_target
-- The assertions and document keys of a version to erase; NULL when an assertion lies
-- above the clearance (fail closed: a key never erases what it may not read).
SELECT array_agg(a.assertion_id ORDER BY a.assertion_id) AS assertion_ids,
       array_agg(DISTINCT d.key) AS documents,
       bool_and(a.confidentiality <= %(clearance)s) AS within,
       (SELECT v.erased FROM versions v WHERE v.version_id = %(version_id)s) AS erased
FROM assertions a JOIN documents d USING (tenant_id, document_id)
WHERE a.version_id = %(version_id)s

-- name: erasure_insert
-- The erasure row of a version, in the transaction of its run-log record.
INSERT INTO erasures (tenant_id, version_id, run_id, seq, key_id, reason, erased_at)
VALUES (app_tenant(), %(version_id)s, %(run_id)s, %(seq)s, %(key_id)s, %(reason)s,
        %(erased_at)s)

-- name: erasure_blank
-- Blank the erased version's content (SECURITY DEFINER, 0011): {blocks, paths, passages,
-- originals} blanked now.
SELECT erase_version(%(version_id)s)

-- name: erasure_run_texts
-- Delete the sealed texts recorded runs took from the erased version (SECURITY DEFINER,
-- 0017); how many were deleted now.
SELECT erase_run_texts(%(version_id)s)

-- name: erasures_of
-- The erasures of the given versions that some assertion within the clearance shows.
SELECT e.version_id, e.run_id, e.seq, e.key_id, e.reason, e.erased_at
FROM erasures e
WHERE e.version_id = ANY(%(ids)s) AND EXISTS (
    SELECT 1 FROM assertions a WHERE a.tenant_id = e.tenant_id AND a.version_id = e.version_id
      AND a.confidentiality <= %(clearance)s)

-- name: erasures_window
-- Erasures within the clearance recorded in (known_from, known_to], optionally of one document.
SELECT e.version_id, e.run_id, e.seq, e.key_id, e.reason, e.erased_at
FROM erasures e
WHERE e.erased_at > %(known_from)s AND e.erased_at <= %(known_to)s AND EXISTS (
    SELECT 1 FROM assertions a JOIN documents d USING (tenant_id, document_id)
    WHERE a.tenant_id = e.tenant_id AND a.version_id = e.version_id
      AND a.confidentiality <= %(clearance)s AND (%(key)s::text IS NULL OR d.key = %(key)s))
ORDER BY e.erased_at, e.version_id

-- name: erasure_records
-- The erasure records of the current tenant's run log, oldest first (re-applied after a restore).
SELECT record FROM runs WHERE kind = 'erasure' ORDER BY seq
