-- table_columns: the columns of the main-schema table $table, in order, with type and whether
-- they may be NULL (no row: no such table).
SELECT column_name, data_type, is_nullable = 'YES'
FROM information_schema.columns
WHERE table_schema = 'main' AND table_name = $table
ORDER BY ordinal_position
