-- When the data was last loaded and computed (UTC), shown in the sidebar so an SRE
-- knows how fresh the numbers are. NULL when it never happened.
SELECT
    (SELECT max(loaded_at) FROM load_log) AS loaded_at,
    (SELECT coalesce(max(batch_id), 0) FROM load_log) AS data_version
