-- previous_goodput_present: whether the last compute's goodput tables were set aside for this
-- compute (pipelines/goodput_kept.py keep_previous_goodput).
SELECT count(*) > 0 FROM duckdb_tables() WHERE temporary AND table_name = 'previous_goodput_steps'
