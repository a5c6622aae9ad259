-- logs_present: how many of the two logs a compute is judged by (compute_log, load_log) exist; a
-- database with fewer (derived tables made by hand, or nothing computed) is not compared.
SELECT count(*)
FROM information_schema.tables
WHERE table_schema = 'main'
    AND table_name IN ('compute_log', 'load_log')
