-- summary_present: whether the weekly summary exists (a database never computed has none).
SELECT count(*) > 0
FROM information_schema.tables
WHERE table_schema = 'main' AND table_name = 'weekly_summary'
