-- data_version: the id of the last committed load batch that changed data (0 for an empty store).
SELECT coalesce(max(batch_id), 0) FROM load_log
