-- Where a kept detector (pipelines/detectors/__init__.py KEPT_DETECTORS) re-finds its episodes,
-- per node of the pass's cluster: from the start of its earliest kept episode that new data can
-- still change (open, or ending at or after $settle_before), or from $settle_before itself when it
-- has none (the nodes not listed). Episodes ending before $settle_before are settled: every sample
-- that could extend or change them is older than the new data by more than the detector's merge gap
-- and window, so the last compute's rows stand. Empty when not $incremental (every episode is found
-- from all history).
-- Params: $detector, $settle_before, $incremental.
CREATE OR REPLACE TEMP TABLE detect_cut AS
SELECT node, least(min(start_ts), $settle_before::TIMESTAMPTZ) AS flags_from
FROM kept_candidates
WHERE $incremental AND cluster = getvariable('pass_cluster') AND detector = $detector
  AND (end_ts IS NULL OR end_ts >= $settle_before::TIMESTAMPTZ)
GROUP BY node;
