-- incomplete_forget: a window recorded as incomplete came back complete (or is recorded again).
DELETE FROM ingest_incomplete
WHERE source = $source AND query_key = $key AND start_ts = $start_ts
