-- The basis (code and settings digest) the pass's cluster's rows of a kept table were built with;
-- no row when they were not (a new table, `compute --force`, an older database).
-- Params: $table_name.
SELECT basis FROM kept_rows_basis
WHERE cluster = getvariable('pass_cluster') AND table_name = $table_name
