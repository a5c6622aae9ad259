-- repeated_copies: exact repeats of a record within a batch (copies beyond the first), loaded once;
-- __records holds each distinct record of the batch with its number of copies.
SELECT coalesce(sum(copies - 1), 0) FROM __records
