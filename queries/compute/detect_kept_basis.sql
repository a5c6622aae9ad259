-- detect_kept_basis: what a kept detector's episodes of this pass's cluster were found with (its
-- code and settings digest); a different basis finds them from all history again.
SELECT basis
FROM kept_candidates_basis
WHERE cluster = getvariable('pass_cluster') AND detector = $detector
