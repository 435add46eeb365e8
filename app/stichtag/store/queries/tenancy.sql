-- name: tenant_insert
-- Create a tenant; app.tenant_id must already be set to its id (RLS insert check).
INSERT INTO tenants (tenant_id, name, time_zone) VALUES (%(tenant_id)s, %(name)s, %(time_zone)s)
RETURNING tenant_id, name, time_zone, created_at

-- name: tenant_by_name
-- Resolve a tenant by name; the caller sets app.tenant_name for this transaction.
SELECT tenant_id, name, time_zone, created_at FROM tenants WHERE name = %(name)s

-- name: tenant_current
-- The tenant of the current transaction.
SELECT tenant_id, name, time_zone, created_at FROM tenants WHERE tenant_id = app_tenant()

-- name: tenant_clock_lock
-- Lock the tenant's transaction clock; serializes all writes of one tenant.
SELECT last_tx, observed_to, clock_timestamp() AS now FROM tenants
WHERE tenant_id = app_tenant() FOR UPDATE

-- name: tenant_clock_observe
-- A run at known_at is about to read the past up to it: the observation hand moves there
-- (never back), so no import can be placed into that past later. The row lock first waits
-- for a write of the tenant still in flight, whose tx_from may lie before known_at.
UPDATE tenants SET observed_to = GREATEST(observed_to, %(known_at)s)
WHERE tenant_id = app_tenant()
RETURNING observed_to

-- name: commit_without_flush
-- This transaction's commit need not wait for the WAL flush: whatever depends on it (the
-- run record an observation precedes) commits synchronously later, and that flush makes
-- this commit durable too (WAL is written in order); lost alone, it protected nothing.
SELECT set_config('synchronous_commit', 'off', true)

-- name: tenant_clock_set
-- Advance the tenant's transaction clock.
UPDATE tenants SET last_tx = %(tx)s WHERE tenant_id = app_tenant()

-- name: key_insert
-- Store a new API key (only the hash of its secret).
INSERT INTO api_keys (key_id, tenant_id, secret_hash, scopes, clearance, label, expires_at, rotated_from)
VALUES (%(key_id)s, app_tenant(), %(secret_hash)s, %(scopes)s, %(clearance)s, %(label)s,
        %(expires_at)s, %(rotated_from)s)
RETURNING key_id, tenant_id, secret_hash, scopes, clearance, label, created_at, expires_at,
          revoked_at, rotated_from

-- name: key_lookup
-- The key row for a presented key id with its tenant's time zone; the caller sets
-- app.key_lookup for this transaction (which also admits that one tenant row).
SELECT k.key_id, k.tenant_id, k.secret_hash, k.scopes, k.clearance, k.label, k.created_at,
       k.expires_at, k.revoked_at, k.rotated_from, t.time_zone
FROM api_keys k JOIN tenants t ON t.tenant_id = k.tenant_id WHERE k.key_id = %(key_id)s

-- name: key_list
-- All keys of the current tenant, newest first (hashes are dropped by the caller).
SELECT key_id, tenant_id, secret_hash, scopes, clearance, label, created_at, expires_at,
       revoked_at, rotated_from
FROM api_keys WHERE tenant_id = app_tenant() ORDER BY created_at DESC, key_id

-- name: key_revoke
-- Revoke a key of the current tenant now; returns nothing when it is unknown or revoked.
UPDATE api_keys SET revoked_at = clock_timestamp()
WHERE key_id = %(key_id)s AND tenant_id = app_tenant() AND revoked_at IS NULL
RETURNING key_id

-- name: key_rate_charge
-- Charge one request to a verified key's rate (0013_key_rates.sql): 0 when admitted, else
-- the seconds until the key may send again. %(interval)s = 1 / rate, %(tolerance)s =
-- (burst - 1) / rate. ON CONFLICT re-reads a row another process just moved, so
-- concurrent charges of one key are counted one by one. The refused branch writes
-- nothing; its wait comes from the row as this statement's snapshot saw it.
WITH n AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS t),
up AS (
    INSERT INTO key_rates AS r (tenant_id, key_id, tat)
    SELECT %(tenant_id)s, %(key_id)s, n.t + %(interval)s FROM n
    ON CONFLICT (tenant_id, key_id) DO UPDATE
        SET tat = greatest(r.tat, excluded.tat - %(interval)s) + %(interval)s
        WHERE greatest(r.tat, excluded.tat - %(interval)s) - (excluded.tat - %(interval)s)
              <= %(tolerance)s
    RETURNING 0.0::float8 AS wait)
SELECT coalesce(
    (SELECT wait FROM up),
    (SELECT greatest(r.tat - n.t - %(tolerance)s, 1e-6) FROM key_rates r, n
     WHERE r.tenant_id = %(tenant_id)s AND r.key_id = %(key_id)s),
    1e-6) AS wait
