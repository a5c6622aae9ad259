-- partial_log_add: a run that had partial answers, kept with the load_log batch its transaction
-- adds (the same id): how many windows were partial, how many of them were loaded, and the first
-- thing the store said.
INSERT INTO ingest_partial_log
SELECT coalesce(max(batch_id), 0) + 1, $source, $partial, $loaded, $said
FROM load_log
