-- last_compute: the data version and settings fingerprint of the newest compute (no row before the
-- first one).
SELECT data_version, settings
FROM compute_log
ORDER BY computed_at DESC
LIMIT 1
