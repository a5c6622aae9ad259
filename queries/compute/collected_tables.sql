-- collected_tables: the `__collected_<table>` tables in which a compute over several clusters set
-- each pass's rows aside, to be published under their own names.
SELECT table_name
FROM duckdb_tables()
WHERE database_name = current_database()
    AND schema_name = 'main'
    AND starts_with(table_name, '__collected_')
ORDER BY 1
