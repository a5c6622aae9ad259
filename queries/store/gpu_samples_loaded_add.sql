-- Note, in the load's transaction, that GPU samples from $from_ts on were stored (the kept
-- per-scrape and 15-minute tables are built again from there by the next compute).
INSERT INTO gpu_samples_loaded VALUES ($from_ts)
