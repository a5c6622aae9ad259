-- The data version the derived tables were built from (the last `gpufleet compute`) beside the
-- newest loaded one. When they differ, raw data changed since the numbers shown were computed
-- (an ingest published before its compute, or a compute failed): the dashboard says so.
-- Fails on a database without a compute log (derived tables made by hand): nothing to compare.
SELECT
    (SELECT data_version FROM compute_log ORDER BY computed_at DESC LIMIT 1) AS computed_version,
    (SELECT coalesce(max(batch_id), 0) FROM load_log) AS data_version
