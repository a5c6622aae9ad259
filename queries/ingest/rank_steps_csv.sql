-- rank_steps_csv: a rank step CSV file at $path as text columns, with the line of each record
-- (__line; line 1 is the header).
SELECT *, row_number() OVER () + 1 AS __line FROM read_csv($path, header = true, all_varchar = true)
