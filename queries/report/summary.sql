-- report/summary: the weekly summary of one week and cluster ('*' = all clusters) as one row per
-- metric, with the previous ISO week's value and the week-over-week delta (value - previous, in
-- the metric's own unit: ratios 0-1, hours, counts, seconds). `better` says which direction is good.
-- UNPIVOT drops NULLs; the LEFT JOINs from `metrics` bring them back as NULL.
-- Params: $week ('YYYY-Www'), $cluster.
WITH
current_week AS (
    SELECT * FROM weekly_summary WHERE week = $week AND cluster = $cluster
),
previous_week AS (
    SELECT s.*
    FROM weekly_summary s, current_week c
    WHERE s.cluster = $cluster AND s.week_start = c.week_start - INTERVAL 7 DAY
),
metrics(position, metric, label, unit, better) AS (
    VALUES
        (1, 'node_availability', 'Node availability', 'ratio', 'higher'),
        (2, 'job_success_rate', 'Job success rate', 'ratio', 'higher'),
        (3, 'job_success_rate_gpu_h', 'Job success rate (GPU-hour weighted)', 'ratio', 'higher'),
        (4, 'first_attempt_success_rate', 'First-attempt success rate', 'ratio', 'higher'),
        (5, 'goodput', 'Goodput', 'ratio', 'higher'),
        (6, 'ettr', 'ETTR', 'ratio', 'higher'),
        (7, 'mtbf_h', 'MTBF', 'hours', 'higher'),
        (8, 'mttr_h', 'MTTR', 'hours', 'lower'),
        (9, 'interruptions_per_1k_gpu_days', 'Interruptions per 1,000 GPU-days', 'per 1,000 GPU-days', 'lower'),
        (10, 'hardware_failures', 'Hardware failures', 'attempts', 'lower'),
        (11, 'software_failures', 'Software failures', 'attempts', 'lower'),
        (12, 'infrastructure_failures', 'Infrastructure failures', 'attempts', 'lower'),
        (13, 'user_failures', 'User failures', 'attempts', 'lower'),
        (14, 'unknown_failures', 'Unclassified failures', 'attempts', 'lower'),
        (15, 'escape_rate', 'Escape rate (fleet failures no check saw coming)', 'ratio', 'lower'),
        (16, 'jobs_placed_on_flagged', 'Jobs placed on flagged nodes', 'jobs', 'lower'),
        (17, 'median_lead_time_s', 'Median lead time of caught failures', 'seconds', 'higher'),
        (18, 'busy_share_allocated', 'Busy share of allocated GPU-hours', 'ratio', 'higher'),
        (19, 'allocated_idle_gpu_h', 'Allocated but idle GPU-hours', 'GPU-hours', 'lower'),
        (20, 'gpus_freeable_by_mig', 'GPUs freeable by MIG packing', 'GPUs', 'lower')
),
current_values AS (
    SELECT COLUMNS('^(node_availability|job_success_rate|job_success_rate_gpu_h|first_attempt_success_rate|goodput|ettr|mtbf_h|mttr_h|interruptions_per_1k_gpu_days|(hardware|software|infrastructure|user|unknown)_failures|escape_rate|jobs_placed_on_flagged|median_lead_time_s|busy_share_allocated|allocated_idle_gpu_h|gpus_freeable_by_mig)$')::DOUBLE
    FROM current_week
),
previous_values AS (
    SELECT COLUMNS('^(node_availability|job_success_rate|job_success_rate_gpu_h|first_attempt_success_rate|goodput|ettr|mtbf_h|mttr_h|interruptions_per_1k_gpu_days|(hardware|software|infrastructure|user|unknown)_failures|escape_rate|jobs_placed_on_flagged|median_lead_time_s|busy_share_allocated|allocated_idle_gpu_h|gpus_freeable_by_mig)$')::DOUBLE
    FROM previous_week
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
FROM metrics m
LEFT JOIN current_long c USING (metric)
LEFT JOIN previous_long p USING (metric)
-- No row at all when the week has no summary, so the caller can say so.
WHERE EXISTS (SELECT 1 FROM current_week)
ORDER BY m.position
