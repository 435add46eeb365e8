-- Reads for answer receipts (docs/audit.md, "Receipts").

-- name: run_leaf
-- The log position and leaf hash of one run of the current tenant.
SELECT seq, leaf_hash FROM runs WHERE run_id = %(run_id)s AND seq IS NOT NULL
