-- goodput_stack: where each ISO week's GPU-hours went, per cluster (SPEC "Fleet goodput stack").
--   capacity_gpu_h    = unavailable_gpu_h + unknown_gpu_h + idle_gpu_h + allocated_gpu_h
--   allocated_gpu_h   = init_gpu_h + checkpoint_gpu_h + wasted_gpu_h + other_gpu_h + productive_gpu_h
--   goodput           = productive_gpu_h / allocated_gpu_h (ratio 0-1; NULL without allocation)
-- Every leaf is rounded to 1e-6 GPU-hour (DECIMAL) and the parents are sums of the rounded leaves,
-- so every level sums exactly.
-- Allocated: GPUs held by job attempts (goodput_segments with gpus > 0), whatever the state of
-- their nodes; recovery gaps are not allocated (GPUs released). The attempt's cluster is
-- goodput_attempts.cluster (attempt_clusters: the cluster its job was landed in). Not allocated:
-- per node and instant, max(gpu_count - GPUs allocated on it, 0), GPUs of an attempt split evenly
-- over its nodes, split by node state from
-- node_state_intervals: unavailable -> unavailable, unknown -> unknown, available or degraded ->
-- idle, maintenance -> not in capacity. Time a node has no state interval for is outside its
-- fleet lifetime and not in capacity either. node_state_intervals must not overlap per node.
-- Windows are ISO weeks (Monday 00:00 UTC .. next Monday), `week` like 2026-W48.
-- Idle splits in two: idle_gpu_h is the unallocated idle capacity above; allocated_idle_gpu_h is
-- the allocated but idle part of allocated_gpu_h, measured by DCGM telemetry (windows a job held
-- with activity below $util_idle_activity: team_utilisation_weekly.idle_gpu_h summed per week and
-- the node's cluster, rounded to 1e-6). It cuts across the badput categories (an idle GPU of a job
-- that computes on one of its 8 is in that job's `productive` time), so it is shown beside the
-- levels, never subtracted from one.
CREATE OR REPLACE TABLE goodput_stack AS
WITH span AS (
    SELECT
        least((SELECT min(start_us) FROM goodput_segments),
              (SELECT min(epoch_us(start_ts)) FROM node_state_intervals)) AS first_us,
        greatest((SELECT max(end_us) FROM goodput_segments),
                 (SELECT max(epoch_us(end_ts)) FROM node_state_intervals)) AS last_us
),
weeks AS (
    SELECT epoch_us(w) AS start_us, epoch_us(w + INTERVAL 7 DAY) AS end_us
    FROM span,
         LATERAL generate_series(
             date_trunc('week', make_timestamp(first_us)::TIMESTAMPTZ),
             make_timestamp(last_us - 1)::TIMESTAMPTZ,
             INTERVAL 7 DAY) AS g(w)
    WHERE first_us IS NOT NULL
),
-- Allocated GPU-microseconds by category, clipped to each week.
allocated AS (
    SELECT
        w.start_us AS week_us,
        a.cluster,
        s.category,
        sum(s.gpus * (least(s.end_us, w.end_us) - greatest(s.start_us, w.start_us))) AS gpu_us
    FROM goodput_segments s
    JOIN goodput_attempts a USING (job_id, attempt)
    JOIN weeks w ON s.start_us < w.end_us AND w.start_us < s.end_us
    WHERE s.gpus > 0
    GROUP BY ALL
),
-- GPUs allocated per node over time: each attempt's GPUs split evenly over its nodes.
node_allocations AS (
    SELECT node, start_us, end_us, gpus / len(nodes) AS gpus
    FROM (SELECT unnest(nodes) AS node, start_us, end_us, gpus, nodes
          FROM goodput_attempts WHERE len(nodes) > 0 AND end_us > start_us)
),
node_states AS (
    -- open intervals (no end yet) run to the newest time known
    SELECT i.node, epoch_us(i.start_ts) AS start_us,
           coalesce(epoch_us(i.end_ts), greatest(span.last_us, epoch_us(i.start_ts))) AS end_us, i.state
    FROM node_state_intervals i, span
),
allocation_changes AS (
    SELECT node, us, sum(delta) AS delta
    FROM (SELECT node, start_us AS us, gpus AS delta FROM node_allocations
          UNION ALL
          SELECT node, end_us, -gpus FROM node_allocations)
    GROUP BY node, us
),
node_points AS (
    SELECT node, us FROM allocation_changes WHERE node IN (SELECT node FROM node_states)
    UNION SELECT node, start_us FROM node_states
    UNION SELECT node, end_us FROM node_states
    UNION SELECT n.node, w.start_us FROM (SELECT DISTINCT node FROM node_states) n, weeks w
),
-- Sweep each node's timeline once: GPUs allocated from each point to the next.
node_elementary AS (
    SELECT
        p.node,
        p.us AS start_us,
        lead(p.us) OVER (PARTITION BY p.node ORDER BY p.us) AS end_us,
        round(sum(coalesce(c.delta, 0)) OVER (PARTITION BY p.node ORDER BY p.us), 9) AS allocated_gpus
    FROM node_points p
    LEFT JOIN allocation_changes c USING (node, us)
),
-- node_state_intervals do not overlap per node, so the state at an instant is the last interval
-- starting at or before it (if it has not ended yet).
node_free AS (
    SELECT
        e.node,
        e.start_us,
        e.end_us,
        st.state,
        greatest(coalesce(n.gpu_count, 0) - e.allocated_gpus, 0) AS free_gpus,
        coalesce(n.cluster, 'unknown') AS cluster
    FROM (SELECT * FROM node_elementary WHERE end_us > start_us) e
    ASOF JOIN (SELECT * FROM node_states WHERE end_us > start_us) st
        ON st.node = e.node AND e.start_us >= st.start_us
    LEFT JOIN nodes n ON n.node = e.node
    WHERE e.end_us <= st.end_us
),
not_allocated AS (
    SELECT
        w.start_us AS week_us,
        f.cluster,
        CASE f.state WHEN 'unavailable' THEN 'unavailable' WHEN 'unknown' THEN 'unknown' ELSE 'idle' END AS category,
        sum(f.free_gpus * (f.end_us - f.start_us)) AS gpu_us
    FROM node_free f
    JOIN weeks w ON w.start_us <= f.start_us AND f.end_us <= w.end_us
    WHERE f.state IN ('unavailable', 'unknown', 'available', 'degraded') AND f.free_gpus > 0
    GROUP BY ALL
),
leaves AS (
    SELECT week_us, cluster, category,
           CAST(round(sum(gpu_us) / 3.6e9, 6) AS DECIMAL(18, 6)) AS gpu_h
    FROM (SELECT * FROM allocated UNION ALL SELECT * FROM not_allocated)
    GROUP BY ALL
),
allocated_idle AS (
    SELECT cluster, week, CAST(round(sum(idle_gpu_h), 6) AS DECIMAL(18, 6)) AS allocated_idle_gpu_h
    FROM team_utilisation_weekly
    GROUP BY ALL
),
pivoted AS (
    SELECT
        week_us,
        cluster,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'unavailable'), 0)::DECIMAL(18, 6) AS unavailable_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'unknown'), 0)::DECIMAL(18, 6) AS unknown_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'idle'), 0)::DECIMAL(18, 6) AS idle_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'init'), 0)::DECIMAL(18, 6) AS init_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'checkpoint'), 0)::DECIMAL(18, 6) AS checkpoint_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'wasted'), 0)::DECIMAL(18, 6) AS wasted_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'other'), 0)::DECIMAL(18, 6) AS other_gpu_h,
        coalesce(sum(gpu_h) FILTER (WHERE category = 'productive'), 0)::DECIMAL(18, 6) AS productive_gpu_h
    FROM leaves
    GROUP BY ALL
)
SELECT
    make_timestamp(week_us)::TIMESTAMPTZ AS window_start,
    make_timestamp(week_us + 7 * 86400 * 1000000::BIGINT)::TIMESTAMPTZ AS window_end,
    strftime(make_timestamp(week_us), '%G-W%V') AS week,
    p.cluster,
    (unavailable_gpu_h + unknown_gpu_h + idle_gpu_h + allocated_gpu_h)::DECIMAL(18, 6) AS capacity_gpu_h,
    unavailable_gpu_h,
    unknown_gpu_h,
    idle_gpu_h,
    allocated_gpu_h,
    init_gpu_h,
    checkpoint_gpu_h,
    wasted_gpu_h,
    other_gpu_h,
    productive_gpu_h,
    CASE WHEN allocated_gpu_h > 0 THEN CAST(productive_gpu_h AS DOUBLE) / CAST(allocated_gpu_h AS DOUBLE) END AS goodput,
    coalesce(i.allocated_idle_gpu_h, 0)::DECIMAL(18, 6) AS allocated_idle_gpu_h
FROM (
    SELECT *,
           (init_gpu_h + checkpoint_gpu_h + wasted_gpu_h + other_gpu_h + productive_gpu_h)::DECIMAL(18, 6) AS allocated_gpu_h
    FROM pivoted
) p
LEFT JOIN allocated_idle i
    ON i.cluster = p.cluster AND i.week = strftime(make_timestamp(p.week_us), '%G-W%V')
ORDER BY window_start, cluster;
