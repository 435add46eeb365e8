-- 0005: the HNSW-driven vector plan checks each index candidate for visibility through
-- the versions that contain it; a GIN index on the passage arrays makes that a lookup.
CREATE INDEX versions_passage_ids ON versions USING gin (passage_ids);
