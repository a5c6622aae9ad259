-- incomplete_windows: the windows of one source loaded from partial answers, per query key, oldest
-- first; a later run fetches them again until they come back complete.
SELECT query_key, start_ts, end_ts
FROM ingest_incomplete
WHERE source = $source
ORDER BY query_key, start_ts
