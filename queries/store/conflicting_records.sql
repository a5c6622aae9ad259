-- conflicting_records: the two records of a batch that share a natural key but differ, by their
-- first lines $first and $second (__records: the batch's distinct records), to name what differs.
SELECT * EXCLUDE (first_row, copies) FROM __records WHERE first_row IN ($first, $second)
ORDER BY first_row
