-- 0003: gated answering. Thresholds are a per-tenant risk decision: each change is a new
-- row (never an update) with the calibration it relies on and a written rationale, and
-- the time it was recorded, so an auditor can read which values applied to any past run.

CREATE TABLE thresholds (
    tenant_id    uuid NOT NULL REFERENCES tenants,
    version      integer NOT NULL CHECK (version >= 1),
    theta_rel    double precision NOT NULL CHECK (theta_rel >= 0 AND theta_rel <= 1),
    tau          double precision NOT NULL CHECK (tau >= 0 AND tau <= 1),
    calibration  jsonb NOT NULL,
    rationale    text NOT NULL CHECK (length(rationale) > 0),
    set_by       text NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, version)
);

ALTER TABLE thresholds ENABLE ROW LEVEL SECURITY;
ALTER TABLE thresholds FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON thresholds USING (tenant_id = app_tenant())
    WITH CHECK (tenant_id = app_tenant());
GRANT SELECT, INSERT ON thresholds TO stichtag_app;
