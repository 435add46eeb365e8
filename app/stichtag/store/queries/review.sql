-- name: review_population
-- Delivered answer runs of the tenant recorded by keys within the clearance, in a time window.
-- Only the parts sampling reads (not generator exchanges or timings).
SELECT run_id, created_at,
       jsonb_build_object('kind', record -> 'kind', 'request', record -> 'request',
                          'result', record -> 'result', 'evidence', record -> 'evidence',
                          'candidates', record -> 'candidates', 'as_of', record -> 'as_of')
         AS record
FROM runs
WHERE kind = 'answer' AND record #>> '{result,status}' IN ('answered', 'partial')
  AND coalesce((record ->> 'clearance')::int, 0) <= %(clearance)s
  AND created_at >= %(run_from)s AND created_at < %(run_to)s
ORDER BY seq

-- name: review_sample_insert
-- Store a sample's spec and population sizes (its items follow in the same transaction).
INSERT INTO review_samples (sample_id, tenant_id, created_by, seed, strata, n_per_stratum,
                            filters, clearance, population)
VALUES (%(sample_id)s, app_tenant(), %(created_by)s, %(seed)s, %(strata)s, %(n)s,
        %(filters)s, %(clearance)s, %(population)s)
RETURNING created_at

-- name: review_item_insert
-- Store one drawn sentence-citation pair of a sample.
INSERT INTO review_items (tenant_id, sample_id, item, stratum, run_id, sentence, citation,
                          document, version_id, start_cp, end_cp, generator, trace)
VALUES (app_tenant(), %(sample_id)s, %(item)s, %(stratum)s, %(run_id)s, %(sentence)s,
        %(citation)s, %(document)s, %(version_id)s, %(start)s, %(end)s, %(generator)s,
        %(trace)s)

-- name: review_sample_get
-- A sample of the tenant, if the caller's clearance reaches the sampler's.
SELECT sample_id, created_by, created_at, seed, strata, n_per_stratum, filters, clearance,
       population
FROM review_samples WHERE sample_id = %(sample_id)s AND clearance <= %(clearance)s

-- name: review_samples_list
-- The tenant's samples within the clearance, newest first.
SELECT s.sample_id, s.created_by, s.created_at, s.seed, s.strata, s.n_per_stratum,
       s.filters, s.clearance, s.population,
       (SELECT count(*) FROM review_items i WHERE i.sample_id = s.sample_id) AS items
FROM review_samples s WHERE s.clearance <= %(clearance)s
ORDER BY s.created_at DESC LIMIT 100

-- name: review_items_get
-- The items of a sample with the run's sentence text and recording time, in item order.
SELECT i.item, i.stratum, i.run_id, i.sentence, i.citation, i.document, i.version_id,
       i.start_cp, i.end_cp, i.generator, i.trace, r.created_at AS run_at,
       -- a sealed sentence (0017) is read from run_texts; an erased one shows the marker
       CASE WHEN jsonb_typeof(r.record #> ARRAY['result', 'sentences', i.sentence::text,
                                                'text']) = 'object'
            THEN COALESCE((SELECT t.text FROM run_texts t
                           WHERE t.tenant_id = r.tenant_id AND t.run_id = r.run_id
                             AND t.commitment = decode(r.record #>> ARRAY['result', 'sentences',
                                 i.sentence::text, 'text', 'sealed'], 'hex')), '[erased]')
            ELSE r.record #>> ARRAY['result', 'sentences', i.sentence::text, 'text']
       END AS sentence_text,
       (r.record #>> '{result,coverage}')::float8 AS coverage,
       r.record #>> '{as_of,valid_at}' AS valid_at
FROM review_items i JOIN runs r USING (run_id)
WHERE i.sample_id = %(sample_id)s ORDER BY i.item

-- name: review_verdicts_get
-- Every verdict of a sample, oldest first.
SELECT verdict_id, item, verdict, note, reviewer, supersedes, created_at
FROM review_verdicts WHERE sample_id = %(sample_id)s ORDER BY created_at, verdict_id

-- name: review_verdict_insert
-- Append a verdict (its run log leaf, run_id = verdict_id, is written first).
INSERT INTO review_verdicts (verdict_id, tenant_id, sample_id, item, verdict, note, reviewer,
                             supersedes)
VALUES (%(verdict_id)s, app_tenant(), %(sample_id)s, %(item)s, %(verdict)s, %(note)s,
        %(reviewer)s, %(supersedes)s)
RETURNING created_at
