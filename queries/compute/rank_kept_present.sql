-- rank_kept_present: which of the kept rank tables ($first, $second) exist with their cluster
-- column (a database from before they were kept has them without it: every job is computed again).
SELECT table_name
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main' AND column_name = 'cluster'
    AND table_name IN ($first, $second)
