-- 0014: reads wait for interactive writes, not for bulk loads (issue #19, item 5).
--
-- A search or answer waits until the tenant's lexical index has applied the outbox rows
-- committed before it (read-your-writes, stichtag/index/applier.py, ``fresh``). While an
-- operator bulk-loads a manifest, that head moves by thousands of index documents a
-- second, and every reader waited for the whole load (measured: p95 4.3 s, 429s from
-- readers queued behind the waiting one; docs/benchmarks.md).
--
-- ``awaited`` marks the rows a reader waits for. A bulk write (``stichtag ingest
-- --manifest``) sets ``app.bulk`` in its transaction and writes its rows unawaited:
-- readers see those versions as the index applies them, in commit order, and every run
-- records the position it read (``lexical_seq``). A client that must see a bulk load
-- sends its consistency token (the outbox position, ``Stichtag-Consistency``), and that
-- is always waited for. Every other write keeps the old default.
--
-- Adding a column with a constant default rewrites nothing (PostgreSQL >= 11). The
-- partial index serves the newest awaited position of a tenant (``outbox_positions``)
-- with one index descent, however many unawaited rows lie above it.

ALTER TABLE outbox ADD COLUMN awaited boolean NOT NULL DEFAULT true;
CREATE INDEX outbox_awaited ON outbox (tenant_id, seq) WHERE awaited;
