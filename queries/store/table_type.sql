-- table_type: whether $table in the main schema is a 'BASE TABLE' or a 'VIEW' (no row: absent).
SELECT table_type FROM information_schema.tables WHERE table_schema = 'main' AND table_name = $table
