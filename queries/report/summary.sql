-- report/summary: the weekly summary of one week and cluster ('*' = all clusters) as one row per
-- metric, with the previous ISO week's value and the week-over-week delta (value - previous, in
-- the metric's own unit: ratios 0-1, hours, counts, seconds). `better` says which direction is good.
-- The metrics, their order, labels, units and directions are the weekly metrics catalogue
-- (queries/data/weekly_metrics.csv): a metric is a weekly_summary column the catalogue names.
-- UNPIVOT drops NULLs, and a database computed before a metric existed lacks its column: the LEFT
-- JOINs from the catalogue bring both back as NULL (unknown, never 0).
-- Params: $week ('YYYY-Www'), $cluster; $weekly_metrics, the catalogue's path, is bound to the
-- bundled file unless the caller passes another (pipelines/sql.py BUNDLED_DATA).
WITH
catalogue AS (
    SELECT position, metric, label, unit, better
    -- null_padding: a row may stop before the trend columns (a metric that is not a trend).
    FROM read_csv($weekly_metrics, header = true, auto_detect = false, delim = ',', quote = '"',
                  escape = '"', null_padding = true, columns = {
        'position': 'INTEGER', 'metric': 'VARCHAR', 'label': 'VARCHAR', 'short_label': 'VARCHAR',
        'unit': 'VARCHAR', 'better': 'VARCHAR', 'card': 'VARCHAR', 'help': 'VARCHAR',
        'trend_title': 'VARCHAR', 'trend_label': 'VARCHAR', 'trend_when_present': 'VARCHAR'})
),
current_week AS (
    SELECT * FROM weekly_summary WHERE week = $week AND cluster = $cluster
),
previous_week AS (
    SELECT s.*
    FROM weekly_summary s, current_week c
    WHERE s.cluster = $cluster AND s.week_start = c.week_start - INTERVAL 7 DAY
),
-- Every column but the row's keys is a number: a metric, or a numerator or denominator the
-- join below leaves out.
current_values AS (
    SELECT COLUMNS(* EXCLUDE (week, cluster, week_start))::DOUBLE FROM current_week
),
previous_values AS (
    SELECT COLUMNS(* EXCLUDE (week, cluster, week_start))::DOUBLE FROM previous_week
),
current_long AS (
    UNPIVOT current_values ON COLUMNS(*) INTO NAME metric VALUE value
),
previous_long AS (
    UNPIVOT previous_values ON COLUMNS(*) INTO NAME metric VALUE value
)
SELECT m.metric, m.label, m.unit, m.better,
       c.value,
       p.value AS previous,
       c.value - p.value AS delta
FROM catalogue m
LEFT JOIN current_long c USING (metric)
LEFT JOIN previous_long p USING (metric)
-- No row at all when the week has no summary, so the caller can say so.
WHERE EXISTS (SELECT 1 FROM current_week)
ORDER BY m.position
