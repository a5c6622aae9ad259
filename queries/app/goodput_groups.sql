-- Goodput and its stack per team and per queue for the week starting $week_start (a DATE or a
-- UTC instant; 7 days), for $cluster ('*' = all), in GPU-hours. Allocated = GPU-time of the
-- job segments that hold GPUs (goodput_segments.gpus > 0; recovery gaps hold none), clipped to
-- the week, as the fleet goodput stack counts it:
--   allocated_gpu_h = init + checkpoint + wasted + other + productive (each GPU-h)
--   goodput = productive_gpu_h / allocated_gpu_h (summed, never an average of jobs' ratios)
-- grouping: 'team' or 'queue' (jobs.team / jobs.queue; '(none)' when not given). Each grouping
-- sums to the same allocated GPU-hours. jobs: jobs with allocated time in the week.
-- An attempt belongs to the cluster its job was landed in (its rows' `cluster`), as in
-- goodput_stack. Also read by the report (`gpufleet report`).
WITH
week AS (
    SELECT $week_start::TIMESTAMPTZ AS start_ts, $week_start::TIMESTAMPTZ + INTERVAL 7 DAY AS end_ts
),
held AS (
    SELECT s.cluster, s.job_id, s.category,
           s.gpus * epoch(least(s.end_ts, w.end_ts) - greatest(s.start_ts, w.start_ts)) / 3600.0 AS gpu_h
    FROM goodput_segments s
    CROSS JOIN week w
    WHERE s.gpus > 0 AND s.start_ts < w.end_ts AND s.end_ts > w.start_ts
      AND ($cluster = '*' OR s.cluster = $cluster)
),
labelled AS (
    SELECT h.*, coalesce(j.team, '(none)') AS team, coalesce(j.queue, '(none)') AS queue
    FROM held h LEFT JOIN jobs j USING (cluster, job_id)
),
grouped AS (
    SELECT
        CASE WHEN grouping(team) = 0 THEN 'team' ELSE 'queue' END AS grouping,
        CASE WHEN grouping(team) = 0 THEN team ELSE queue END AS name,
        count(DISTINCT (cluster, job_id)) AS jobs,
        sum(gpu_h) AS allocated_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'init'), 0) AS init_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'checkpoint'), 0) AS checkpoint_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'wasted'), 0) AS wasted_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'other'), 0) AS other_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'productive'), 0) AS productive_gpu_h
    FROM labelled
    GROUP BY GROUPING SETS ((team), (queue))
)
SELECT grouping, name, jobs,
       CAST(allocated_gpu_h AS DOUBLE) AS allocated_gpu_h,
       CAST(productive_gpu_h AS DOUBLE) AS productive_gpu_h,
       CAST(init_gpu_h AS DOUBLE) AS init_gpu_h,
       CAST(checkpoint_gpu_h AS DOUBLE) AS checkpoint_gpu_h,
       CAST(wasted_gpu_h AS DOUBLE) AS wasted_gpu_h,
       CAST(other_gpu_h AS DOUBLE) AS other_gpu_h,
       CAST(productive_gpu_h / nullif(allocated_gpu_h, 0) AS DOUBLE) AS goodput
FROM grouped
ORDER BY grouping DESC, allocated_gpu_h DESC, name
