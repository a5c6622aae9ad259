-- detect_forget_kept: `compute --force`: every kept detector finds its episodes from all history
-- again.
DELETE FROM kept_candidates;
DELETE FROM kept_candidates_basis;
