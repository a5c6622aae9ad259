-- node_availability_daily: seconds in each state per node and UTC day, availability, failures and repairs
-- (docs/metrics.md "Node state and availability", "MTBF and MTTR").
--
-- Intervals of node_state_intervals are split at UTC midnight. Units: seconds (_s), hours (_h), ratio 0-1.
--   in_fleet_s      seconds of the day inside the node's lifetime
--   availability    (available_s + degraded_s) / (in_fleet_s - maintenance_s); NULL when that is 0.
--                   unknown counts against (fail closed).
--   up_s            available_s + degraded_s (the MTBF numerator)
--   failures        transitions from available|degraded straight into unavailable|unknown that
--                   happen on this day (maintenance in between is planned work, not a failure)
--   repair_episodes merged runs of consecutive unavailable|unknown intervals that START on this day
--                   and end before the data horizon (an episode still open at the horizon has no
--                   known length yet and is left out); repair_s is their total length, counted in
--                   full on the start day even when it runs past midnight.
--   mtbf_h          up_s / failures / 3600; NULL when there was no failure.
--   mttr_h          repair_s / repair_episodes / 3600; NULL when no episode started and ended.
CREATE OR REPLACE TABLE node_availability_daily AS
WITH
pieces AS (
    SELECT i.node, i.state, d.day,
        epoch(least(i.end_ts, d.day + INTERVAL 1 DAY)) - epoch(greatest(i.start_ts, d.day)) AS seconds
    FROM node_state_intervals i,
        LATERAL (SELECT unnest(generate_series(date_trunc('day', i.start_ts), i.end_ts, INTERVAL 1 DAY)) AS day) d
    WHERE greatest(i.start_ts, d.day) < least(i.end_ts, d.day + INTERVAL 1 DAY)
),
seconds AS (
    SELECT node, CAST(day AS DATE) AS day,
        sum(seconds) AS in_fleet_s,
        coalesce(sum(seconds) FILTER (WHERE state = 'maintenance'), 0) AS maintenance_s,
        coalesce(sum(seconds) FILTER (WHERE state = 'available'), 0) AS available_s,
        coalesce(sum(seconds) FILTER (WHERE state = 'degraded'), 0) AS degraded_s,
        coalesce(sum(seconds) FILTER (WHERE state = 'unavailable'), 0) AS unavailable_s,
        coalesce(sum(seconds) FILTER (WHERE state = 'unknown'), 0) AS unknown_s
    FROM pieces
    GROUP BY node, day
),
ordered AS (
    SELECT node, start_ts, end_ts, state,
        state IN ('unavailable', 'unknown') AS is_down,
        lag(state) OVER w AS previous_state,
        max(end_ts) OVER (PARTITION BY node) AS lifetime_end
    FROM node_state_intervals
    WINDOW w AS (PARTITION BY node ORDER BY start_ts)
),
episodes_numbered AS (
    SELECT *,
        sum((is_down AND coalesce(previous_state NOT IN ('unavailable', 'unknown'), true))::INTEGER)
            OVER (PARTITION BY node ORDER BY start_ts ROWS UNBOUNDED PRECEDING) AS episode
    FROM ordered
),
episodes AS (
    SELECT node, min(start_ts) AS start_ts, max(end_ts) AS end_ts, any_value(lifetime_end) AS lifetime_end
    FROM episodes_numbered
    WHERE is_down
    GROUP BY node, episode
),
failures AS (
    SELECT node, CAST(date_trunc('day', start_ts) AS DATE) AS day, count(*) AS failures
    FROM ordered
    WHERE is_down AND previous_state IN ('available', 'degraded')
    GROUP BY ALL
),
repairs AS (
    SELECT node, CAST(date_trunc('day', start_ts) AS DATE) AS day,
        count(*) AS repair_episodes, sum(epoch(end_ts) - epoch(start_ts)) AS repair_s
    FROM episodes
    WHERE end_ts < lifetime_end
    GROUP BY ALL
)
SELECT s.day, s.node, coalesce(n.cluster, 'unlisted') AS cluster,
    s.in_fleet_s, s.maintenance_s, s.available_s, s.degraded_s, s.unavailable_s, s.unknown_s,
    (s.available_s + s.degraded_s) / nullif(s.in_fleet_s - s.maintenance_s, 0) AS availability,
    s.available_s + s.degraded_s AS up_s,
    coalesce(f.failures, 0) AS failures,
    (s.available_s + s.degraded_s) / nullif(coalesce(f.failures, 0), 0) / 3600 AS mtbf_h,
    coalesce(r.repair_episodes, 0) AS repair_episodes,
    coalesce(r.repair_s, 0) AS repair_s,
    r.repair_s / nullif(r.repair_episodes, 0) / 3600 AS mttr_h
FROM seconds s
LEFT JOIN nodes n ON n.node = s.node
LEFT JOIN failures f ON f.node = s.node AND f.day = s.day
LEFT JOIN repairs r ON r.node = s.node AND r.day = s.day
ORDER BY s.day, s.node
