-- kept_rows_forget_all: `compute --force`: every kept table is built again from all samples.
DELETE FROM kept_rows_basis
