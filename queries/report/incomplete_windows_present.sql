-- incomplete_windows_present: whether the database has the table of incomplete ingest windows (a
-- database from before it existed has none; the next ingest creates it).
SELECT count(*) > 0 FROM duckdb_tables() WHERE table_name = 'ingest_incomplete' AND NOT temporary
