-- database_path: the file of the open database (NULL for an in-memory one).
SELECT path FROM duckdb_databases() WHERE database_name = current_database()
