-- Tables and views the database holds; the app checks that the derived ones exist
-- before it renders, so a database that was never computed gets a clear message.
-- (duckdb_tables() answers from the catalog; information_schema is much slower.)
SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
UNION ALL
SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal
ORDER BY 1
