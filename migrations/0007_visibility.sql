-- 0007: the visibility rule written once in SQL, and the tenant's zone read with the key.
--
-- visible_at is the predicate of DESIGN section 3.2 (docs/architecture.md, "One
-- visibility rule"): tx_from <= known_at < tx_to and valid_from <= valid_at < valid_to.
-- Every query that asks "visible as of" calls it instead of repeating the range tests.
-- It is a single-expression SQL function, IMMUTABLE and not STRICT, so the planner
-- inlines it into the calling query: the GiST index on (tx, valid) is used exactly as
-- it was for the written-out predicate (the plans are compared in
-- tests/integration/test_visibility_sql.py).
CREATE FUNCTION visible_at(tx tstzrange, valid tstzrange, known_at timestamptz,
                           valid_at timestamptz) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT $1 @> $3 AND $2 @> $4 $$;
GRANT EXECUTE ON FUNCTION visible_at(tstzrange, tstzrange, timestamptz, timestamptz)
    TO stichtag_app;

-- Authentication reads the key row with app.key_lookup set and no tenant yet; letting
-- that one key's tenant row be read in the same statement gives the request its time
-- zone without a second query. Nothing else becomes readable: the subquery sees only
-- the key named by app.key_lookup (api_keys' own policy).
DROP POLICY tenant_read ON tenants;
CREATE POLICY tenant_read ON tenants FOR SELECT
    USING (tenant_id = app_tenant()
           OR name = nullif(current_setting('app.tenant_name', true), '')
           OR tenant_id = (SELECT k.tenant_id FROM api_keys k
                           WHERE k.key_id = nullif(current_setting('app.key_lookup', true), '')));
