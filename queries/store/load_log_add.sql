-- load_log_add: record a load that added or changed rows, inside its transaction; its batch id is
-- the new data version a compute is judged against.
INSERT INTO load_log
SELECT coalesce(max(batch_id), 0) + 1, now(), $source, $tables, $rows_in, $rows_new
FROM load_log
