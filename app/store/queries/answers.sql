-- name: thresholds_current
-- The tenant's newest threshold version (none: the documented defaults apply).
SELECT version, theta_rel, tau, calibration, rationale, set_by, recorded_at
FROM thresholds ORDER BY version DESC LIMIT 1

-- name: thresholds_history
-- Every threshold version of the tenant, oldest first.
SELECT version, theta_rel, tau, calibration, rationale, set_by, recorded_at
FROM thresholds ORDER BY version

-- name: thresholds_insert
-- Record a new threshold version (the next number; the tenant clock lock serializes).
INSERT INTO thresholds (tenant_id, version, theta_rel, tau, calibration, rationale, set_by)
SELECT app_tenant(), coalesce(max(version), 0) + 1, %(theta_rel)s, %(tau)s, %(calibration)s,
       %(rationale)s, %(set_by)s
FROM thresholds
RETURNING version, theta_rel, tau, calibration, rationale, set_by, recorded_at

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
