-- The fleet goodput stack of the week starting $week_start, in GPU-hours, for
-- $cluster ('*' = the sum over clusters). capacity = unavailable + unknown + idle +
-- allocated; allocated = init + checkpoint + wasted + other + productive.
-- goodput = productive GPU-h / allocated GPU-h (summed, never averaged).
SELECT
    sum(capacity_gpu_h) AS capacity_gpu_h,
    sum(unavailable_gpu_h) AS unavailable_gpu_h,
    sum(unknown_gpu_h) AS unknown_gpu_h,
    sum(idle_gpu_h) AS idle_gpu_h,
    sum(allocated_gpu_h) AS allocated_gpu_h,
    sum(init_gpu_h) AS init_gpu_h,
    sum(checkpoint_gpu_h) AS checkpoint_gpu_h,
    sum(wasted_gpu_h) AS wasted_gpu_h,
    sum(other_gpu_h) AS other_gpu_h,
    sum(productive_gpu_h) AS productive_gpu_h,
    sum(productive_gpu_h) / nullif(sum(allocated_gpu_h), 0) AS goodput,
    count(*) AS clusters
FROM goodput_stack
WHERE window_start = $week_start
  AND cluster IS NOT NULL AND cluster <> '*'
  AND ($cluster = '*' OR cluster = $cluster)
