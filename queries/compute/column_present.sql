-- column_present: whether the main-schema table $table of this database has the column $column
-- (a database from before the column existed builds the table again).
SELECT count(*) > 0
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main'
    AND table_name = $table AND column_name = $column
