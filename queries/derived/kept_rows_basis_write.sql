-- Record the basis the pass's cluster's rows of a kept table were just built with.
-- Params: $table_name, $basis.
DELETE FROM kept_rows_basis
WHERE cluster = getvariable('pass_cluster') AND table_name = $table_name;

INSERT INTO kept_rows_basis VALUES (getvariable('pass_cluster'), $table_name, $basis);
