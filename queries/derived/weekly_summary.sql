-- weekly_summary: the numbers of the weekly reliability review, one row per ISO week
-- ('YYYY-Www', UTC) and cluster, plus one all-clusters row per week with cluster = '*'.
-- Every ratio is (sum of numerators) / (sum of denominators) over the week and the cluster;
-- a ratio whose denominator is 0 is NULL (nothing to measure), never 1.
--
--   node_availability            (available + degraded) s / (in-fleet - maintenance) s,
--                                from node_availability_daily, days of the week.
--   job_success_rate             succeeded / eligible jobs (succeeded, failed, node_fail, timeout,
--                                oom) among jobs that ENDED in the week (job_outcomes.end_ts).
--   job_success_rate_gpu_h       the same weighted by each job's GPU-hours.
--   first_attempt_success_rate   eligible jobs whose first attempt succeeded / eligible jobs.
--   goodput                      productive GPU-h / allocated GPU-h, from goodput_stack.
--   ettr                         sum of productive s / sum of (end - submit) s over the jobs that
--                                ended in the week (jobs without a submit time are left out).
--   mtbf_h                       up (available + degraded) hours / transitions from up to
--                                unavailable|unknown that happened in the week; NULL: no failure.
--   mttr_h                       mean length in hours of merged unavailable|unknown episodes that
--                                START in the week (full length, even past the week's end; an
--                                episode still open at the data horizon is left out), as
--                                node_availability_daily counts them per day.
--   interruptions_per_1k_gpu_days  interruptions x 1000 / allocated GPU-days (docs/metrics.md
--                                "Interruptions per 1,000 GPU-days", the same as metrics/job_success.sql):
--                                attempts that ended in the week as failed, node_fail, timeout, oom or
--                                preempted, over the GPU-days job attempts held in the week
--                                (goodput_stack.allocated_gpu_h / 24).
--   *_failures                   attempts that ended in the week with that failure class: hardware,
--                                infrastructure, software, unknown count fleet failures only
--                                (attempt_outcomes.fleet_failure: states failed / node_fail, never
--                                preempted or evicted); user_failures counts class user (cancelled,
--                                timeout, oom), shown apart.
--   escape_rate                  fleet failures (failure_escapes rows) that ended in the week with
--                                outcome 'escaped' / all of them: the share the checks did not see coming.
--   jobs_placed_on_flagged       distinct jobs with a fleet failure that ended in the week on a node
--                                whose finding or not-good condition was already open at the attempt's start.
--   median_lead_time_s           median of failure_escapes.lead_time_s (failure end - first signal)
--                                over the week's failures the checks saw coming (not escaped), s.
--   busy_share_allocated         busy GPU-h / allocated GPU-h seen in telemetry, from
--                                team_utilisation_weekly (sum of busy_gpu_h / sum of measured_gpu_h):
--                                how much of the allocated capacity did work.
--   allocated_idle_gpu_h         allocated GPU-hours whose activity stayed below the idle threshold
--                                (team_utilisation_weekly.idle_gpu_h summed).
--   gpus_freeable_by_mig         whole GPUs MIG packing would free on average over the week
--                                (mig_packing.gpus_freed summed).
-- Clusters: a node's cluster from `nodes`; a job's and an attempt's are the cluster the job was
-- landed in (`jobs.cluster`, `attempt_clusters`), whether or not its nodes are in `nodes` and
-- whether or not it started, as in goodput_stack.
-- Every cluster that lists nodes or landed jobs has a row for each week; the '*' row sums every job,
-- attempt and stack row.
-- Extra columns after the contract's give the numerators and denominators, and week_start (DATE).
CREATE OR REPLACE TABLE weekly_summary AS
WITH
node_cluster AS (
    SELECT node, cluster FROM nodes
),
attempt_cluster AS (
    SELECT job_id, attempt, cluster FROM attempt_clusters
),
job_cluster AS (
    -- every job, one that never started too (cancelled while pending)
    SELECT job_id, cluster FROM jobs
),
availability AS (
    -- Project first, so GROUP BY names only our columns (views may carry more, e.g. `week`).
    SELECT week,
           CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
           sum(up_s) AS up_s,
           sum(counted_s) AS counted_s
    FROM (SELECT strftime(day, '%G-W%V') AS week, cluster,
                 CAST(available_s + degraded_s AS DOUBLE) AS up_s,
                 CAST(in_fleet_s - maintenance_s AS DOUBLE) AS counted_s
          FROM node_availability_daily)
    GROUP BY GROUPING SETS ((week, cluster), (week))
),
-- Consecutive intervals of a node, to find transitions and merge down episodes.
ordered_intervals AS (
    SELECT i.node, nc.cluster, i.start_ts, i.end_ts,
           i.state IN ('unavailable', 'unknown') AS is_down,
           coalesce(lag(i.state) OVER w IN ('available', 'degraded'), false) AS follows_up,
           coalesce(lag(i.state) OVER w IN ('unavailable', 'unknown'), false) AS follows_down,
           max(i.end_ts) OVER (PARTITION BY i.node) AS lifetime_end
    FROM node_state_intervals i
    LEFT JOIN node_cluster nc ON nc.node = i.node
    WINDOW w AS (PARTITION BY i.node ORDER BY i.start_ts)
),
down_intervals AS (
    SELECT *, sum(CASE WHEN follows_down THEN 0 ELSE 1 END)
                  OVER (PARTITION BY node ORDER BY start_ts ROWS UNBOUNDED PRECEDING) AS episode
    FROM ordered_intervals
    WHERE is_down
),
episodes AS (
    SELECT node, any_value(cluster) AS cluster, min(start_ts) AS start_ts, max(end_ts) AS end_ts,
           any_value(lifetime_end) AS lifetime_end,
           -- the episode's first interval follows an up one: a failure (MTBF's denominator)
           bool_or(follows_up) AS from_up
    FROM down_intervals
    GROUP BY node, episode
),
reliability AS (
    SELECT week,
           CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
           count(*) FILTER (WHERE from_up) AS failures,
           -- an episode still open at the data horizon has no known length yet: left out
           count(*) FILTER (WHERE end_ts < lifetime_end) AS episodes,
           sum(epoch(end_ts - start_ts)) FILTER (WHERE end_ts < lifetime_end) AS down_s
    FROM (SELECT strftime(start_ts, '%G-W%V') AS week, cluster, from_up, start_ts, end_ts,
                 lifetime_end
          FROM episodes)
    GROUP BY GROUPING SETS ((week, cluster), (week))
),
ended_jobs AS (
    SELECT strftime(o.end_ts, '%G-W%V') AS week, jc.cluster, o.eligible, o.succeeded,
           o.first_attempt_succeeded, CAST(o.gpu_hours AS DOUBLE) AS gpu_hours,
           CAST(g.productive_s AS DOUBLE) AS productive_s,
           CASE WHEN j.submit_ts IS NOT NULL AND g.productive_s IS NOT NULL
                THEN epoch(o.end_ts - j.submit_ts) END AS submit_to_end_s
    FROM job_outcomes o
    LEFT JOIN job_cluster jc USING (job_id)
    LEFT JOIN jobs j USING (job_id)
    LEFT JOIN job_goodput g USING (job_id)
    WHERE o.end_ts IS NOT NULL
),
job_rates AS (
    SELECT week,
           CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
           grouping(cluster) AS all_clusters,
           count(*) AS jobs_ended,
           count(*) FILTER (WHERE eligible) AS eligible_jobs,
           count(*) FILTER (WHERE eligible AND succeeded) AS succeeded_jobs,
           count(*) FILTER (WHERE eligible AND first_attempt_succeeded) AS first_attempt_succeeded_jobs,
           coalesce(sum(gpu_hours) FILTER (WHERE eligible), 0) AS eligible_gpu_h,
           coalesce(sum(gpu_hours) FILTER (WHERE eligible AND succeeded), 0) AS succeeded_gpu_h,
           sum(productive_s) FILTER (WHERE submit_to_end_s IS NOT NULL) AS ettr_productive_s,
           sum(submit_to_end_s) AS ettr_submit_to_end_s
    FROM ended_jobs
    GROUP BY GROUPING SETS ((week, cluster), (week))
),
ended_attempts AS (
    SELECT strftime(a.end_ts, '%G-W%V') AS week, ac.cluster, a.state, a.failure_class, a.fleet_failure
    FROM attempt_outcomes a
    LEFT JOIN attempt_cluster ac USING (job_id, attempt)
    WHERE a.end_ts IS NOT NULL
),
attempt_counts AS (
    SELECT week,
           CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
           grouping(cluster) AS all_clusters,
           count(*) FILTER (WHERE state IN ('failed', 'node_fail', 'timeout', 'oom', 'preempted'))
               AS interruptions,
           -- fleet failures only (attempt_outcomes.fleet_failure): user and policy
           -- (preempted / evicted) attempts are never failures of the fleet
           count(*) FILTER (WHERE fleet_failure AND failure_class = 'hardware') AS hardware_failures,
           count(*) FILTER (WHERE fleet_failure AND failure_class = 'software') AS software_failures,
           count(*) FILTER (WHERE fleet_failure AND failure_class = 'infrastructure') AS infrastructure_failures,
           count(*) FILTER (WHERE failure_class = 'user') AS user_failures,
           count(*) FILTER (WHERE fleet_failure AND failure_class = 'unknown') AS unknown_failures
    FROM ended_attempts
    GROUP BY GROUPING SETS ((week, cluster), (week))
),
escapes AS (
    SELECT week,
           CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
           count(*) AS fleet_failures,
           count(*) FILTER (WHERE escaped) AS escaped_failures,
           count(DISTINCT job_id) FILTER (WHERE placed_on_flagged) AS jobs_placed_on_flagged,
           median(lead_time_s) FILTER (WHERE NOT escaped) AS median_lead_time_s
    FROM (SELECT week, cluster, job_id, escaped, placed_on_flagged, lead_time_s FROM failure_escapes)
    GROUP BY GROUPING SETS ((week, cluster), (week))
),
stack AS (
    SELECT week,
           CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
           sum(allocated_gpu_h) AS allocated_gpu_h,
           sum(productive_gpu_h) AS productive_gpu_h
    FROM (SELECT strftime(window_start, '%G-W%V') AS week, cluster,
                 CAST(allocated_gpu_h AS DOUBLE) AS allocated_gpu_h,
                 CAST(productive_gpu_h AS DOUBLE) AS productive_gpu_h
          FROM goodput_stack
          -- every per-cluster row, so the '*' row holds all allocated GPU-hours; an all-clusters
          -- row, if a version adds one, would count twice
          WHERE cluster <> '*')
    GROUP BY GROUPING SETS ((week, cluster), (week))
),
utilisation AS (
    SELECT week,
           CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
           sum(measured_gpu_h) AS measured_gpu_h,
           sum(busy_gpu_h) AS busy_gpu_h,
           sum(idle_gpu_h) AS idle_gpu_h
    FROM (SELECT week, cluster, measured_gpu_h, busy_gpu_h, idle_gpu_h FROM team_utilisation_weekly)
    GROUP BY GROUPING SETS ((week, cluster), (week))
),
packing AS (
    SELECT week,
           CASE WHEN grouping(cluster) = 1 THEN '*' ELSE cluster END AS cluster,
           sum(gpus_freed) AS gpus_freed
    FROM (SELECT week, cluster, gpus_freed FROM mig_packing)
    GROUP BY GROUPING SETS ((week, cluster), (week))
),
weeks AS (
    SELECT week FROM availability
    UNION SELECT week FROM job_rates
    UNION SELECT week FROM attempt_counts
    UNION SELECT week FROM stack
    UNION SELECT week FROM escapes
),
grid AS (
    SELECT w.week, c.cluster
    FROM weeks w
    -- a cluster whose jobs were landed but whose inventory never was gets its row too
    CROSS JOIN (SELECT cluster FROM node_cluster UNION SELECT cluster FROM job_cluster
                UNION SELECT '*') c
)
SELECT
    g.week,
    g.cluster,
    av.up_s / nullif(av.counted_s, 0) AS node_availability,
    jr.succeeded_jobs / nullif(jr.eligible_jobs, 0) AS job_success_rate,
    jr.succeeded_gpu_h / nullif(jr.eligible_gpu_h, 0) AS job_success_rate_gpu_h,
    jr.first_attempt_succeeded_jobs / nullif(jr.eligible_jobs, 0) AS first_attempt_success_rate,
    st.productive_gpu_h / nullif(st.allocated_gpu_h, 0) AS goodput,
    jr.ettr_productive_s / nullif(jr.ettr_submit_to_end_s, 0) AS ettr,
    av.up_s / 3600.0 / nullif(re.failures, 0) AS mtbf_h,
    re.down_s / 3600.0 / nullif(re.episodes, 0) AS mttr_h,
    coalesce(ac.interruptions, 0) * 1000.0 / nullif(st.allocated_gpu_h / 24.0, 0)
        AS interruptions_per_1k_gpu_days,
    coalesce(ac.hardware_failures, 0) AS hardware_failures,
    coalesce(ac.software_failures, 0) AS software_failures,
    coalesce(ac.infrastructure_failures, 0) AS infrastructure_failures,
    coalesce(ac.user_failures, 0) AS user_failures,
    coalesce(ac.unknown_failures, 0) AS unknown_failures,
    es.escaped_failures / nullif(es.fleet_failures, 0) AS escape_rate,
    coalesce(es.jobs_placed_on_flagged, 0) AS jobs_placed_on_flagged,
    es.median_lead_time_s,
    -- Numerators and denominators, so weeks and clusters can be re-aggregated exactly.
    coalesce(es.fleet_failures, 0) AS fleet_failures,
    coalesce(es.escaped_failures, 0) AS escaped_failures,
    coalesce(jr.jobs_ended, 0) AS jobs_ended,
    coalesce(jr.eligible_jobs, 0) AS eligible_jobs,
    coalesce(jr.succeeded_jobs, 0) AS succeeded_jobs,
    coalesce(ac.interruptions, 0) AS interruptions,
    coalesce(re.failures, 0) AS node_failures,
    av.up_s / 3600.0 AS up_h,
    st.allocated_gpu_h,
    st.productive_gpu_h,
    CAST(strptime(g.week || '-1', '%G-W%V-%u') AS DATE) AS week_start,
    ut.busy_gpu_h / nullif(ut.measured_gpu_h, 0) AS busy_share_allocated,
    ut.idle_gpu_h AS allocated_idle_gpu_h,
    coalesce(pk.gpus_freed, 0) AS gpus_freeable_by_mig,
    ut.measured_gpu_h AS measured_allocated_gpu_h,
    ut.busy_gpu_h AS busy_allocated_gpu_h
FROM grid g
LEFT JOIN availability av USING (week, cluster)
LEFT JOIN job_rates jr USING (week, cluster)
LEFT JOIN reliability re USING (week, cluster)
LEFT JOIN attempt_counts ac USING (week, cluster)
LEFT JOIN stack st USING (week, cluster)
LEFT JOIN escapes es USING (week, cluster)
LEFT JOIN utilisation ut USING (week, cluster)
LEFT JOIN packing pk USING (week, cluster)
ORDER BY g.week, g.cluster = '*', g.cluster
