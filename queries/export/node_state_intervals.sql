-- export/node_state_intervals: the intervals that overlap the week, CLIPPED to it, so the weeks of
-- an export never count the same second twice. Partitioned by week.
-- Params: $week ('YYYY-Www'), $week_start (DATE).
SELECT cluster, node,
       greatest(start_ts, $week_start::TIMESTAMPTZ) AS start_ts,
       least(end_ts, $week_start::TIMESTAMPTZ + INTERVAL 7 DAY) AS end_ts,
       state, reason,
       $week AS week
FROM node_state_intervals
WHERE start_ts < $week_start::TIMESTAMPTZ + INTERVAL 7 DAY AND end_ts > $week_start::TIMESTAMPTZ
ORDER BY cluster, node, start_ts
