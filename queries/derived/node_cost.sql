-- node_cost: what each sick or slow node cost the jobs this week, and the fleet goodput had it been
-- replaced on Monday (docs/metrics.md "Node cost"). One row per node and ISO week with a cost.
--   failure_gpu_h   wasted progress plus recovery gap of the fleet failures it is implicated in
--                   (failure_escapes.lost_gpu_s, split evenly over the attempt's implicated_nodes),
--                   week of the failure
--   straggler_gpu_h drag of straggler ranks on it (rank_slowdown.drag_s of ranks with is_straggler)
--                   x the attempt's GPUs (every GPU of a synchronous job waits for the slow rank),
--                   week of the attempt's end (running: the data horizon)
--   waiting_gpu_h   gpu_count x the time the node was unavailable or unknown while a job of its
--                   cluster waited in the queue (submit to first start), clipped to the week
--   lost_gpu_h      the sum of the three, GPU-hours
--   failures, straggler_ranks  how many failed attempts and straggler ranks that is
--   fleet_goodput            productive / allocated GPU-h of the week (goodput_stack, all clusters)
--   fleet_goodput_without    (productive + lost_gpu_h) / (allocated + recovery + waiting GPU-h): the
--                   node's losses turned into kept work; recovery and waiting time would have been
--                   allocated, wasted progress and drag already were
--   goodput_regained  fleet_goodput_without - fleet_goodput (ratio points)
CREATE OR REPLACE TABLE node_cost AS
WITH
failure_share AS (
    SELECT f.week, u.node, f.job_id, f.attempt,
        f.lost_gpu_s / len(f.implicated_nodes) AS lost_gpu_s,
        -- the recovery part: it lies outside the allocation (GPUs released)
        (f.lost_gpu_s - coalesce(w.wasted_gpu_s, 0)) / len(f.implicated_nodes) AS recovery_gpu_s
    FROM failure_escapes f
    CROSS JOIN unnest(f.implicated_nodes) AS u(node)
    LEFT JOIN (
        SELECT job_id, attempt, sum((epoch(end_ts) - epoch(start_ts)) * gpus) AS wasted_gpu_s
        FROM goodput_segments WHERE category = 'wasted' GROUP BY ALL
    ) w USING (job_id, attempt)
    WHERE len(f.implicated_nodes) > 0
),
failure_cost AS (
    SELECT week, node, count(*) AS failures, sum(lost_gpu_s) AS failure_gpu_s,
        sum(recovery_gpu_s) AS recovery_gpu_s
    FROM failure_share
    GROUP BY ALL
),
straggler_cost AS (
    SELECT strftime(coalesce(a.end_ts, a.start_ts + to_seconds(a.duration_s)), '%G-W%V') AS week, r.node,
        count(*) AS straggler_ranks,
        sum(r.drag_s * a.num_gpus) AS straggler_gpu_s
    FROM rank_slowdown r
    JOIN attempt_outcomes a USING (job_id, attempt)
    WHERE r.is_straggler AND r.node IS NOT NULL
    GROUP BY ALL
),
queue_intervals AS (
    -- Time jobs waited: submit to the first attempt's start, per cluster of the job.
    SELECT ac.cluster, j.submit_ts AS start_ts, min(a.start_ts) AS end_ts
    FROM jobs j
    JOIN job_attempts a USING (job_id)
    JOIN (SELECT DISTINCT job_id, job_cluster AS cluster FROM attempt_clusters) ac USING (job_id)
    WHERE j.submit_ts IS NOT NULL
    GROUP BY ac.cluster, j.job_id, j.submit_ts
    HAVING min(a.start_ts) > j.submit_ts
),
queue_islands AS (
    SELECT cluster, min(start_ts) AS start_ts, max(end_ts) AS end_ts
    FROM (
        SELECT *, sum(CASE WHEN start_ts <= prev_end THEN 0 ELSE 1 END)
                      OVER (PARTITION BY cluster ORDER BY start_ts, end_ts) AS island
        FROM (SELECT *, max(end_ts) OVER (PARTITION BY cluster ORDER BY start_ts, end_ts
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
              FROM queue_intervals)
    )
    GROUP BY cluster, island
),
down_while_waiting AS (
    SELECT i.node, n.gpu_count,
        greatest(i.start_ts, q.start_ts) AS start_ts, least(i.end_ts, q.end_ts) AS end_ts
    FROM node_state_intervals i
    JOIN nodes n ON n.node = i.node
    JOIN queue_islands q ON q.cluster = n.cluster AND q.start_ts < i.end_ts AND q.end_ts > i.start_ts
    WHERE i.state IN ('unavailable', 'unknown')
),
waiting_by_week AS (
    SELECT strftime(w.week_start, '%G-W%V') AS week, d.node,
        sum(d.gpu_count * (epoch(least(d.end_ts, w.week_start + INTERVAL 7 DAY))
                           - epoch(greatest(d.start_ts, w.week_start)))) AS waiting_gpu_s
    FROM down_while_waiting d
    CROSS JOIN unnest(generate_series(date_trunc('week', d.start_ts), d.end_ts, INTERVAL 7 DAY)) AS w(week_start)
    WHERE w.week_start < d.end_ts
    GROUP BY ALL
),
costs AS (
    SELECT week, node,
        coalesce(f.failures, 0) AS failures,
        coalesce(f.failure_gpu_s, 0) / 3600.0 AS failure_gpu_h,
        coalesce(f.recovery_gpu_s, 0) / 3600.0 AS recovery_gpu_h,
        coalesce(s.straggler_ranks, 0) AS straggler_ranks,
        coalesce(s.straggler_gpu_s, 0) / 3600.0 AS straggler_gpu_h,
        coalesce(w.waiting_gpu_s, 0) / 3600.0 AS waiting_gpu_h
    FROM failure_cost f
    FULL JOIN straggler_cost s USING (week, node)
    FULL JOIN waiting_by_week w USING (week, node)
),
fleet AS (
    SELECT strftime(window_start, '%G-W%V') AS week,
        sum(productive_gpu_h)::DOUBLE AS productive_gpu_h, sum(allocated_gpu_h)::DOUBLE AS allocated_gpu_h
    FROM goodput_stack
    WHERE cluster <> '*'
    GROUP BY ALL
)
SELECT c.week, c.node, n.cluster,
    c.failure_gpu_h + c.straggler_gpu_h + c.waiting_gpu_h AS lost_gpu_h,
    c.failure_gpu_h, c.recovery_gpu_h, c.straggler_gpu_h, c.waiting_gpu_h,
    c.failures, c.straggler_ranks,
    fl.productive_gpu_h / nullif(fl.allocated_gpu_h, 0) AS fleet_goodput,
    (fl.productive_gpu_h + c.failure_gpu_h + c.straggler_gpu_h + c.waiting_gpu_h)
        / nullif(fl.allocated_gpu_h + c.recovery_gpu_h + c.waiting_gpu_h, 0) AS fleet_goodput_without,
    (fl.productive_gpu_h + c.failure_gpu_h + c.straggler_gpu_h + c.waiting_gpu_h)
        / nullif(fl.allocated_gpu_h + c.recovery_gpu_h + c.waiting_gpu_h, 0)
        - fl.productive_gpu_h / nullif(fl.allocated_gpu_h, 0) AS goodput_regained,
    CAST(strptime(c.week || '-1', '%G-W%V-%u') AS DATE) AS week_start
FROM costs c
LEFT JOIN nodes n USING (node)
LEFT JOIN fleet fl USING (week)
WHERE c.failure_gpu_h + c.straggler_gpu_h + c.waiting_gpu_h > 0
ORDER BY c.week, lost_gpu_h DESC, c.node
