-- report/goodput_stack: the fleet goodput stack of a week in GPU-hours, one row per level, from
-- capacity down to productive (goodput_stack; '*' sums every cluster's levels). Levels sum
-- exactly: capacity = unavailable + unknown + idle + allocated; allocated = init + checkpoint +
-- wasted + other + productive. share_of_capacity = level / capacity (0-1).
-- Idle is split: `idle` is capacity no job held (a level); `allocated but idle` (kind 'part') is
-- the part of `allocated` whose telemetry showed the GPUs idle, not a level the others sum to.
-- Params: $week_start (DATE, a Monday), $cluster ('*' = all).
WITH
totals AS (
    -- DOUBLE: the view keeps GPU-hours as DECIMAL so its levels sum exactly.
    SELECT CAST(sum(capacity_gpu_h) AS DOUBLE) AS capacity,
           CAST(sum(unavailable_gpu_h) AS DOUBLE) AS unavailable,
           CAST(sum(unknown_gpu_h) AS DOUBLE) AS unknown,
           CAST(sum(idle_gpu_h) AS DOUBLE) AS idle,
           CAST(sum(allocated_gpu_h) AS DOUBLE) AS allocated,
           CAST(sum(init_gpu_h) AS DOUBLE) AS init,
           CAST(sum(checkpoint_gpu_h) AS DOUBLE) AS checkpoint,
           CAST(sum(wasted_gpu_h) AS DOUBLE) AS wasted,
           CAST(sum(other_gpu_h) AS DOUBLE) AS other,
           CAST(sum(productive_gpu_h) AS DOUBLE) AS productive,
           CAST(sum(allocated_idle_gpu_h) AS DOUBLE) AS allocated_idle
    FROM goodput_stack
    WHERE CAST(window_start AS DATE) = $week_start
      -- '*': every cluster row, 'unknown' (work on no known node) included, as weekly_summary's '*'
      AND cluster <> '*'
      AND ($cluster = '*' OR cluster = $cluster)
    HAVING count(*) > 0
),
levels(position, level, kind, parent) AS (
    VALUES
        (1, 'capacity', 'total', NULL),
        (2, 'unavailable', 'loss', 'capacity'),
        (3, 'unknown', 'loss', 'capacity'),
        (4, 'idle', 'loss', 'capacity'),
        (5, 'allocated', 'total', 'capacity'),
        (6, 'init', 'loss', 'allocated'),
        (7, 'checkpoint', 'loss', 'allocated'),
        (8, 'wasted', 'loss', 'allocated'),
        (9, 'other', 'loss', 'allocated'),
        (10, 'productive', 'total', 'allocated'),
        (11, 'allocated but idle', 'part', 'allocated')
)
SELECT l.level, l.kind, l.parent,
       CASE l.level
           WHEN 'capacity' THEN t.capacity WHEN 'unavailable' THEN t.unavailable
           WHEN 'unknown' THEN t.unknown WHEN 'idle' THEN t.idle
           WHEN 'allocated' THEN t.allocated WHEN 'init' THEN t.init
           WHEN 'checkpoint' THEN t.checkpoint WHEN 'wasted' THEN t.wasted
           WHEN 'other' THEN t.other WHEN 'productive' THEN t.productive
           WHEN 'allocated but idle' THEN t.allocated_idle
       END AS gpu_h,
       gpu_h / nullif(t.capacity, 0) AS share_of_capacity
FROM levels l, totals t
ORDER BY l.position
