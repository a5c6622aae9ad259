-- How many raw GPU samples the prune at the cut $pruned_before dropped (0: none were older).
SELECT coalesce(sum(samples_dropped), 0) AS samples_dropped
FROM raw_retention
WHERE pruned_before = $pruned_before
