-- 0004: the tamper-evident run log (DESIGN.md section 8). Per tenant, every run is a leaf
-- of an RFC 6962/9162 Merkle tree: leaf = SHA-256(0x00 || RFC 8785 canonical JSON of the
-- record). Sequence numbers are gapless per tenant because appends lock the tenant's
-- log head; the head keeps the compact range (the roots of the perfect subtrees), so
-- each append costs O(log n) and never reads old leaves. Signed checkpoints are made with
-- an Ed25519 key that lives outside the database, so a DBA who rewrites rows and
-- recomputes every hash still cannot forge a checkpoint an auditor already holds.

ALTER TABLE runs ADD COLUMN seq bigint;
ALTER TABLE runs ADD COLUMN leaf_hash bytea;
ALTER TABLE runs ADD CONSTRAINT runs_seq_unique UNIQUE (tenant_id, seq);

CREATE TABLE log_heads (
    tenant_id   uuid PRIMARY KEY REFERENCES tenants,
    size        bigint NOT NULL CHECK (size >= 0),
    root        bytea NOT NULL,
    frontier    bytea[] NOT NULL,
    checkpoint  text NOT NULL
);

ALTER TABLE log_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE log_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON log_heads USING (tenant_id = app_tenant())
    WITH CHECK (tenant_id = app_tenant());
GRANT SELECT, INSERT ON log_heads TO stichtag_app;
GRANT UPDATE (size, root, frontier, checkpoint) ON log_heads TO stichtag_app;
