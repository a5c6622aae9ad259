-- report/goodput_stack: the fleet goodput stack of a week in GPU-hours, one row per level, from
-- capacity down to productive. The totals are the dashboard's (`app/goodput_stack`: the
-- goodput_stack rows of the week summed, '*' = every cluster), so the stack is aggregated once.
-- Levels sum exactly: capacity = unavailable + unknown + idle + allocated; allocated = init +
-- checkpoint + wasted + other + productive. share_of_capacity = level / capacity (0-1).
-- Idle is split: `idle` is capacity no job held (a level); `allocated but idle` (kind 'part') is
-- the part of `allocated` whose telemetry showed the GPUs idle, not a level the others sum to.
-- No rows when the week has no goodput_stack row.
-- Params: $week_start (a Monday), $cluster ('*' = all).
WITH
totals AS {{ app/goodput_stack }},
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
           WHEN 'capacity' THEN t.capacity_gpu_h WHEN 'unavailable' THEN t.unavailable_gpu_h
           WHEN 'unknown' THEN t.unknown_gpu_h WHEN 'idle' THEN t.idle_gpu_h
           WHEN 'allocated' THEN t.allocated_gpu_h WHEN 'init' THEN t.init_gpu_h
           WHEN 'checkpoint' THEN t.checkpoint_gpu_h WHEN 'wasted' THEN t.wasted_gpu_h
           WHEN 'other' THEN t.other_gpu_h WHEN 'productive' THEN t.productive_gpu_h
           WHEN 'allocated but idle' THEN t.allocated_idle_gpu_h
       END AS gpu_h,
       gpu_h / nullif(t.capacity_gpu_h, 0) AS share_of_capacity
FROM levels l, totals t
WHERE t.clusters > 0
ORDER BY l.position
