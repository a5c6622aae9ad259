-- The node's state intervals ($cluster, $node) clipped to [$week_start, $week_end):
-- available / degraded / unavailable / unknown / maintenance, with why; duration_s seconds.
SELECT
    state,
    greatest(start_ts, $week_start) AS start_ts,
    least(end_ts, $week_end) AS end_ts,
    epoch(least(end_ts, $week_end) - greatest(start_ts, $week_start)) AS duration_s,
    coalesce(reason, '') AS reason
FROM node_state_intervals
WHERE cluster = $cluster AND node = $node AND start_ts < $week_end AND end_ts > $week_start
ORDER BY start_ts
