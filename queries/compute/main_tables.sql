-- main_tables: the stored tables of this database's main schema (not temp ones, not the `__`
-- work tables of a running compute); the caller leaves out landing, storage and bookkeeping tables.
SELECT table_name
FROM duckdb_tables()
WHERE database_name = current_database()
    AND schema_name = 'main'
    AND NOT temporary
    AND NOT starts_with(table_name, '__')
ORDER BY 1
