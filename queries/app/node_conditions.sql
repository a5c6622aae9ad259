-- The node's condition history ($cluster, $node) in [$week_start, $week_end): consecutive
-- samples with the same condition, status and reason merged into one run
-- [start_ts, end_ts), end = the next run's first sample (or the last sample).
-- verdict: `healthy` or `unhealthy` by the condition's polarity, the rule availability uses
-- (a condition named with one of $good_when_true_suffixes is healthy when `True`, any other
-- when `False`: MemoryPressure=False is healthy, Unschedulable=True, a cordon, is not);
-- `unknown` for status Unknown.
WITH samples AS (
    SELECT ts, condition, status, coalesce(reason, '') AS reason
    FROM node_conditions
    WHERE cluster = $cluster AND node = $node AND ts >= $week_start AND ts < $week_end
),
marked AS (
    SELECT *,
        CASE WHEN lag(status) OVER w IS DISTINCT FROM status
               OR lag(reason) OVER w IS DISTINCT FROM reason THEN 1 ELSE 0 END AS changed
    FROM samples
    WINDOW w AS (PARTITION BY condition ORDER BY ts)
),
runs AS (
    SELECT *, sum(changed) OVER (PARTITION BY condition ORDER BY ts) AS run_id
    FROM marked
),
merged AS (
    SELECT condition, run_id, any_value(status) AS status, any_value(reason) AS reason,
           min(ts) AS start_ts, max(ts) AS last_ts, count(*) AS samples
    FROM runs
    GROUP BY condition, run_id
)
SELECT
    condition,
    status,
    CASE
        WHEN status = 'Unknown' THEN 'unknown'
        WHEN (status = 'True') = (len(list_filter($good_when_true_suffixes, lambda s: ends_with(condition, s))) > 0)
            THEN 'healthy'
        ELSE 'unhealthy'
    END AS verdict,
    condition || '=' || status || coalesce(' (' || nullif(reason, '') || ')', '') AS detail,
    reason,
    start_ts,
    coalesce(lead(start_ts) OVER (PARTITION BY condition ORDER BY start_ts), last_ts) AS end_ts,
    samples
FROM merged
ORDER BY condition, start_ts
