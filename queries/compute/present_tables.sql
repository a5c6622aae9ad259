-- present_tables: the tables and views of the main schema, to name the first derived table a
-- reader needs that no compute has built yet.
SELECT table_name
FROM information_schema.tables
WHERE table_schema = 'main'
