-- insertion_order: whether DuckDB keeps rows in insertion order; steps whose rows need no order
-- turn it off while they run (freer parallel aggregation) and restore it after.
SELECT current_setting('preserve_insertion_order')
