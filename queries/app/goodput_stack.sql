-- The fleet goodput stack of the week starting $week_start, in GPU-hours, for
-- $cluster ('*' = the sum over clusters). capacity = unavailable + unknown + idle +
-- allocated; allocated = init + checkpoint + wasted + other + productive.
-- goodput = productive GPU-h / allocated GPU-h (summed, never averaged).
-- allocated_idle_gpu_h: the part of allocated the telemetry showed idle (not a level of the sums).
-- report/goodput_stack reads these totals too (one aggregation for the dashboard and the report).
SELECT
    CAST(sum(capacity_gpu_h) AS DOUBLE) AS capacity_gpu_h,
    CAST(sum(unavailable_gpu_h) AS DOUBLE) AS unavailable_gpu_h,
    CAST(sum(unknown_gpu_h) AS DOUBLE) AS unknown_gpu_h,
    CAST(sum(idle_gpu_h) AS DOUBLE) AS idle_gpu_h,
    CAST(sum(allocated_gpu_h) AS DOUBLE) AS allocated_gpu_h,
    CAST(sum(init_gpu_h) AS DOUBLE) AS init_gpu_h,
    CAST(sum(checkpoint_gpu_h) AS DOUBLE) AS checkpoint_gpu_h,
    CAST(sum(wasted_gpu_h) AS DOUBLE) AS wasted_gpu_h,
    CAST(sum(other_gpu_h) AS DOUBLE) AS other_gpu_h,
    CAST(sum(productive_gpu_h) AS DOUBLE) AS productive_gpu_h,
    CAST(sum(productive_gpu_h) / nullif(sum(allocated_gpu_h), 0) AS DOUBLE) AS goodput,
    CAST(sum(allocated_idle_gpu_h) AS DOUBLE) AS allocated_idle_gpu_h,
    count(*) AS clusters
FROM goodput_stack
WHERE window_start = $week_start
  AND cluster IS NOT NULL AND cluster <> '*'
  AND ($cluster = '*' OR cluster = $cluster)
