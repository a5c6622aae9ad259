-- goodput_kept_present: how many of the goodput tables kept per job ($tables) exist with their
-- cluster column (a database whose last compute did not finish them has fewer: every job is built
-- again).
SELECT count(DISTINCT table_name)
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main' AND column_name = 'cluster'
    AND list_contains($tables, table_name)
