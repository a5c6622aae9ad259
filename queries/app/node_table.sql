-- One row per node (cluster, node) for the week [$week_start, $week_end), $cluster ('*' = all):
-- availability = (available + degraded) / (in fleet - maintenance) from summed
-- seconds (NULL when the node was in maintenance all week); unavailable_gpu_h and
-- unknown_gpu_h = seconds in that state x the node's GPUs / 3600; anomalies that
-- overlap the week; open_anomalies = those still open at the week's end;
-- straggler_jobs = jobs ended in the week in which a rank on the node was a
-- straggler; ladder_step = the highest remediation step (watch < cordon < drain <
-- reset_gpu < reboot < replace) its open anomalies call for. cost_gpu_h = node_cost.lost_gpu_h of
-- the week (GPU-hours jobs lost because of the node: failures, straggler drag, time it was down
-- while jobs waited), goodput_regained its node_cost.goodput_regained. Worst (costliest) first.
WITH days AS (
    SELECT
        cluster,
        node,
        sum(available_s + degraded_s) AS up_s,
        sum(in_fleet_s - maintenance_s) AS counted_s,
        sum(unavailable_s) AS unavailable_s,
        sum(unknown_s) AS unknown_s
    FROM node_availability_daily
    WHERE day >= CAST($week_start AS DATE) AND day < CAST($week_end AS DATE)
      AND ($cluster = '*' OR cluster = $cluster)
    GROUP BY cluster, node
),
ladder(action, step_rank) AS (
    VALUES ('watch', 1), ('cordon', 2), ('drain', 3), ('reset_gpu', 4), ('reboot', 5), ('replace', 6)
),
anoms AS (
    SELECT
        a.cluster,
        a.node,
        count(*) AS anomalies,
        count(*) FILTER (WHERE a.end_ts IS NULL OR a.end_ts > $week_end) AS open_anomalies,
        max(l.step_rank) FILTER (WHERE a.end_ts IS NULL OR a.end_ts > $week_end) AS step_rank
    FROM anomalies a
    LEFT JOIN ladder l USING (action)
    WHERE a.node IS NOT NULL
      AND a.start_ts < $week_end AND (a.end_ts IS NULL OR a.end_ts > $week_start)
    GROUP BY a.cluster, a.node
),
cost AS (
    SELECT cluster, node, lost_gpu_h, goodput_regained
    FROM node_cost
    WHERE week_start = CAST($week_start AS DATE)
),
stragglers AS (
    SELECT r.cluster, r.node, count(DISTINCT r.job_id) AS straggler_jobs
    FROM rank_slowdown r
    JOIN job_outcomes o USING (cluster, job_id)
    WHERE r.is_straggler AND o.end_ts >= $week_start AND o.end_ts < $week_end
    GROUP BY r.cluster, r.node
)
SELECT
    d.node,
    d.cluster,
    n.gpu_model,
    n.gpu_count,
    d.up_s / nullif(d.counted_s, 0) AS availability,
    d.unavailable_s * n.gpu_count / 3600 AS unavailable_gpu_h,
    d.unknown_s * n.gpu_count / 3600 AS unknown_gpu_h,
    coalesce(a.anomalies, 0) AS anomalies,
    coalesce(a.open_anomalies, 0) AS open_anomalies,
    coalesce(s.straggler_jobs, 0) AS straggler_jobs,
    l.action AS ladder_step,
    coalesce(c.lost_gpu_h, 0) AS cost_gpu_h,
    c.goodput_regained
FROM days d
LEFT JOIN nodes n USING (cluster, node)
LEFT JOIN anoms a USING (cluster, node)
LEFT JOIN stragglers s USING (cluster, node)
LEFT JOIN ladder l ON l.step_rank = a.step_rank
LEFT JOIN cost c USING (cluster, node)
ORDER BY cost_gpu_h DESC, unavailable_gpu_h + unknown_gpu_h DESC, anomalies DESC, d.node, d.cluster
