-- table_exists: whether a table or view of that name exists (in any schema, temp ones included).
SELECT count(*) > 0 FROM information_schema.tables WHERE table_name = $name
