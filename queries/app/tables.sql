-- Tables and views the database holds; the app checks that the derived ones exist
-- before it renders, so a database that was never computed gets a clear message.
SELECT table_name
FROM information_schema.tables
WHERE table_schema = 'main'
ORDER BY table_name
