-- kept_rows_forget: forget the basis of every cluster's kept rows of $table_name, so each pass
-- builds them again from all samples.
DELETE FROM kept_rows_basis WHERE table_name = $table_name
