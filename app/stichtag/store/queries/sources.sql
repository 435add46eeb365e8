-- name: original_insert
-- Keep an uploaded file once per tenant (content-addressed; an identical upload is a no-op).
INSERT INTO originals (tenant_id, original_id, media_type, size, data)
VALUES (app_tenant(), %(original_id)s, %(media_type)s, %(size)s, %(data)s)
ON CONFLICT (tenant_id, original_id) DO NOTHING

-- name: version_source_insert
-- Record that a version was extracted from an original, with provenance and layout map.
INSERT INTO version_sources (tenant_id, version_id, original_id, extractor_id, provenance,
                             layout)
VALUES (app_tenant(), %(version_id)s, %(original_id)s, %(extractor_id)s, %(provenance)s,
        %(layout)s)
ON CONFLICT (tenant_id, version_id, original_id) DO NOTHING

-- name: version_sources_first
-- The first source of each given version that some assertion within the clearance shows.
SELECT DISTINCT ON (s.version_id) s.version_id, s.original_id, o.media_type, o.size,
       s.extractor_id, s.provenance, s.created_at
FROM version_sources s
JOIN originals o ON o.tenant_id = s.tenant_id AND o.original_id = s.original_id
WHERE s.version_id = ANY(%(ids)s)
  AND NOT EXISTS (SELECT 1 FROM erasures e WHERE e.tenant_id = s.tenant_id
                  AND e.version_id = s.version_id)
  AND EXISTS (
    SELECT 1 FROM assertions a WHERE a.tenant_id = s.tenant_id AND a.version_id = s.version_id
      AND a.confidentiality <= %(clearance)s)
ORDER BY s.version_id, s.created_at, s.original_id

-- name: version_source_layout
-- The compressed layout map of a version as extracted from one original.
SELECT layout FROM version_sources
WHERE version_id = %(version_id)s AND original_id = %(original_id)s

-- name: version_original
-- The bytes of a version's first (or the named) original, if an assertion within the clearance shows it.
SELECT o.original_id, o.media_type, o.data
FROM version_sources s
JOIN originals o ON o.tenant_id = s.tenant_id AND o.original_id = s.original_id
WHERE s.version_id = %(version_id)s
  AND (%(original_id)s::text IS NULL OR s.original_id = %(original_id)s::text)
  AND NOT EXISTS (SELECT 1 FROM erasures e WHERE e.tenant_id = s.tenant_id
                  AND e.version_id = s.version_id)
  AND EXISTS (
    SELECT 1 FROM assertions a WHERE a.tenant_id = s.tenant_id AND a.version_id = s.version_id
      AND a.confidentiality <= %(clearance)s)
ORDER BY s.created_at, s.original_id
LIMIT 1
