-- name: document_get
-- A document row by key (writers already hold the tenant clock lock, which serializes them).
SELECT document_id, key FROM documents WHERE key = %(key)s

-- name: document_insert
-- Create a document of the current tenant, numbered per tenant (migrations/0010: the
-- writer holds the tenant's clock lock, so the largest id plus one is free).
INSERT INTO documents (tenant_id, document_id, key)
VALUES (app_tenant(), (SELECT coalesce(max(document_id), 0) + 1 FROM documents
                       WHERE tenant_id = app_tenant()), %(key)s)
RETURNING document_id, key

-- name: assertions_current
-- The currently known assertions of a document (transaction time still open).
SELECT assertion_id, version_id, lower(valid) AS valid_from, upper(valid) AS valid_to,
       lower(tx) AS tx_from, title, doc_class, confidentiality
FROM assertions WHERE document_id = %(document_id)s AND upper_inf(tx)
ORDER BY lower(valid)

-- name: assertion_close
-- End an assertion's transaction time (never reopened; a trigger guards it).
UPDATE assertions SET tx = tstzrange(lower(tx), %(tx)s, '[)'), ended = %(ended)s,
       ended_reason = %(reason)s
WHERE assertion_id = %(assertion_id)s AND upper_inf(tx)
RETURNING assertion_id

-- name: assertion_insert
-- Open a new assertion at the transaction time of this write, numbered per tenant.
INSERT INTO assertions (tenant_id, assertion_id, document_id, version_id, valid, tx, title,
                        doc_class, confidentiality, provenance)
VALUES (app_tenant(), (SELECT coalesce(max(assertion_id), 0) + 1 FROM assertions
                       WHERE tenant_id = app_tenant()), %(document_id)s, %(version_id)s,
        tstzrange(%(valid_from)s, %(valid_to)s, '[)'), tstzrange(%(tx)s, NULL, '[)'),
        %(title)s, %(doc_class)s, %(confidentiality)s, %(provenance)s)
RETURNING assertion_id

-- name: outbox_insert
-- Tell derived indexes about an assertion change, in the same transaction; the position
-- is the tenant's next (its order is the tenant's commit order: writers hold the clock).
-- The notification goes out at commit (once per transaction and tenant) to every server
-- process listening on the database, so each applies the change to its own replica at
-- once instead of on its next read (app/stichtag/index/worker.py). A bulk write's rows
-- (app.bulk = on) are not awaited by readers (0014_outbox_awaited.sql).
WITH added AS (
    INSERT INTO outbox (tenant_id, seq, kind, assertion_id, awaited)
    VALUES (app_tenant(),
            (SELECT coalesce(max(seq), 0) + 1 FROM outbox WHERE tenant_id = app_tenant()),
            %(kind)s, %(assertion_id)s,
            coalesce(current_setting('app.bulk', true), '') <> 'on')
    RETURNING tenant_id)
SELECT pg_notify('stichtag_outbox', tenant_id::text) FROM added

-- name: assertion_asof
-- The assertion of a document visible at (valid_at, known_at) within the clearance.
SELECT a.assertion_id, d.key AS document, a.version_id, lower(a.valid) AS valid_from,
       upper(a.valid) AS valid_to, lower(a.tx) AS tx_from, upper(a.tx) AS tx_to, a.title,
       a.doc_class, a.confidentiality, a.provenance, a.ended, a.ended_reason
FROM documents d JOIN assertions a USING (document_id)
WHERE d.key = %(key)s AND visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)
  AND a.confidentiality <= %(clearance)s

-- name: assertions_in_force
-- Every document's assertion visible at (valid_at, known_at) within the clearance, by key
-- (the whole collection a catalogue question lists), at most limit rows.
SELECT a.assertion_id, d.key AS document, a.version_id, lower(a.valid) AS valid_from,
       upper(a.valid) AS valid_to, lower(a.tx) AS tx_from, upper(a.tx) AS tx_to, a.title,
       a.doc_class, a.confidentiality, a.provenance, a.ended, a.ended_reason
FROM documents d JOIN assertions a USING (document_id)
WHERE visible_at(a.tx, a.valid, %(known_at)s::timestamptz, %(valid_at)s::timestamptz)
  AND a.confidentiality <= %(clearance)s
ORDER BY d.key, a.assertion_id
LIMIT %(limit)s

-- name: assertion_history
-- Every assertion of a document within the clearance, on both time axes.
SELECT a.assertion_id, d.key AS document, a.version_id, lower(a.valid) AS valid_from,
       upper(a.valid) AS valid_to, lower(a.tx) AS tx_from, upper(a.tx) AS tx_to, a.title,
       a.doc_class, a.confidentiality, a.provenance, a.ended, a.ended_reason
FROM documents d JOIN assertions a USING (document_id)
WHERE d.key = %(key)s AND a.confidentiality <= %(clearance)s
ORDER BY lower(a.tx), lower(a.valid), a.assertion_id

-- name: version_visible
-- A version the key may read: some assertion of it lies within the clearance.
SELECT v.version_id, v.media_type, v.segmenter_id, v.len_cp, v.len_u16, v.n_sentences,
       v.created_at
FROM versions v
WHERE v.version_id = %(version_id)s AND EXISTS (
    SELECT 1 FROM assertions a WHERE a.tenant_id = v.tenant_id AND a.version_id = v.version_id
      AND a.confidentiality <= %(clearance)s)

-- name: assertion_by_id
-- One assertion with its document key.
SELECT a.assertion_id, d.key AS document, a.version_id, lower(a.valid) AS valid_from,
       upper(a.valid) AS valid_to, lower(a.tx) AS tx_from, upper(a.tx) AS tx_to, a.title,
       a.doc_class, a.confidentiality, a.provenance, a.ended, a.ended_reason
FROM assertions a JOIN documents d USING (document_id)
WHERE a.assertion_id = %(assertion_id)s

-- name: changes_window
-- Assertions within the clearance whose transaction time starts or ends in (known_from, known_to].
SELECT a.assertion_id, d.key AS document, a.version_id, lower(a.valid) AS valid_from,
       upper(a.valid) AS valid_to, lower(a.tx) AS tx_from, upper(a.tx) AS tx_to, a.title,
       a.doc_class, a.confidentiality, a.provenance, a.ended, a.ended_reason
FROM documents d JOIN assertions a USING (document_id)
WHERE a.confidentiality <= %(clearance)s
  AND (%(key)s::text IS NULL OR d.key = %(key)s)
  -- Implied by the test below; lets the GiST index on (tx, valid) skip most rows.
  AND a.tx && tstzrange(%(known_from)s, %(known_to)s, '(]')
  AND ((lower(a.tx) > %(known_from)s AND lower(a.tx) <= %(known_to)s)
       OR (upper(a.tx) > %(known_from)s AND upper(a.tx) <= %(known_to)s))
ORDER BY d.key, lower(a.tx), lower(a.valid), a.assertion_id
LIMIT %(cap)s

-- name: documents_known_at
-- Which of the given documents had an assertion within the clearance visible at known_at.
SELECT DISTINCT d.key
FROM documents d JOIN assertions a USING (document_id)
WHERE d.key = ANY(%(keys)s) AND a.tx @> %(known_at)s::timestamptz
  AND a.confidentiality <= %(clearance)s

-- name: versions_visible
-- Which of the given versions have some assertion within the clearance (one read).
SELECT DISTINCT a.version_id FROM assertions a
WHERE a.version_id = ANY(%(ids)s) AND a.confidentiality <= %(clearance)s

-- name: version_readable
-- A version whose text the key may read: within the clearance and not erased.
SELECT v.version_id, v.media_type, v.segmenter_id, v.len_cp, v.len_u16, v.n_sentences,
       v.created_at
FROM versions v
WHERE v.version_id = %(version_id)s AND NOT v.erased AND EXISTS (
    SELECT 1 FROM assertions a WHERE a.tenant_id = v.tenant_id AND a.version_id = v.version_id
      AND a.confidentiality <= %(clearance)s)

-- name: versions_readable
-- Which of the given versions have some assertion within the clearance and are not erased.
SELECT DISTINCT a.version_id FROM assertions a
JOIN versions v ON v.tenant_id = a.tenant_id AND v.version_id = a.version_id
WHERE a.version_id = ANY(%(ids)s) AND a.confidentiality <= %(clearance)s AND NOT v.erased
