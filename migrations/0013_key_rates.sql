-- 0013: the per-key rate limit, shared by every server process and node (issue #16, item 5).
--
-- Until now each server process kept its own token buckets, so N processes (or N nodes)
-- let a key through at N times its rate. The bucket now lives here, as one row per key in
-- the form of the generic cell rate algorithm: ``tat`` is the key's theoretical arrival
-- time (epoch seconds of the database's clock, which all nodes share). A request is
-- admitted while tat - now <= (burst - 1) / rate, and then moves tat on by 1 / rate; that
-- is a token bucket of ``burst`` tokens refilled at ``rate`` per second, as one number.
-- The charge runs in the transaction that reads the key (stichtag/store/queries/tenancy.sql,
-- key_rate_charge), after the secret matched, so it costs one statement and no new
-- transaction; the row lock on the key's row orders concurrent charges exactly.
--
-- UNLOGGED: a rate is not a fact to keep. It writes no WAL (no fsync per request, nothing
-- shipped to a standby, which never reads it), and after a crash PostgreSQL empties it,
-- which only gives every key a full bucket once.
--
-- The primary key holds tenant_id (the Citus-ready rule of 0010); the row belongs to the
-- key's tenant and is read either in that tenant's transactions or, during
-- authentication, for exactly the key presented (app.key_lookup, as api_keys).

CREATE UNLOGGED TABLE key_rates (
    tenant_id uuid NOT NULL,
    key_id    text NOT NULL,
    tat       double precision NOT NULL,
    PRIMARY KEY (tenant_id, key_id)
);

ALTER TABLE key_rates ENABLE ROW LEVEL SECURITY;
ALTER TABLE key_rates FORCE ROW LEVEL SECURITY;
CREATE POLICY key_rate_owner ON key_rates
    USING (tenant_id = app_tenant()
           OR (key_id = nullif(current_setting('app.key_lookup', true), '')
               AND tenant_id = (SELECT k.tenant_id FROM api_keys k WHERE k.key_id = key_rates.key_id)))
    WITH CHECK (tenant_id = app_tenant()
           OR (key_id = nullif(current_setting('app.key_lookup', true), '')
               AND tenant_id = (SELECT k.tenant_id FROM api_keys k WHERE k.key_id = key_rates.key_id)));

GRANT SELECT, INSERT, UPDATE (tat) ON key_rates TO stichtag_app;
