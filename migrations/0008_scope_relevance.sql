-- 0008: the scope gate's threshold and the combined relevance model join the versioned
-- thresholds (docs/thresholds.md). Both are nullable: a version recorded before this
-- migration keeps meaning what it meant — its relevance model is its one-feature
-- calibration of the rerank score, and its scope threshold is the built-in one.
ALTER TABLE thresholds
    ADD COLUMN theta_scope double precision CHECK (theta_scope >= 0 AND theta_scope <= 1),
    ADD COLUMN relevance jsonb;
