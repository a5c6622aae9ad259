-- kept_table_present: whether the table $name exists in this database and is noted in kept_tables
-- (kept between computes; otherwise it is built from all history).
SELECT count(*) > 0
FROM duckdb_tables() t
JOIN kept_tables k ON k.table_name = t.table_name
WHERE t.database_name = current_database() AND t.schema_name = 'main' AND t.table_name = $name
