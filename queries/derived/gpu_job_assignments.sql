-- gpu_job_assignments: which job attempt held which physical GPU, and when (docs/metrics.md
-- "Who used which GPU"). One row per attempt, node and GPU index; [start_ts, end_ts) is the
-- attempt's span (goodput_attempts: a running attempt ends at the data horizon).
--   mapped_by = 'rank_steps'  the GPUs the attempt's ranks logged on that node (rank_steps.gpu, as
--                             kept in rank_gpus);
--   mapped_by = 'whole_node'  no rank named a GPU there, and the attempt's GPUs per node
--                             (jobs.num_gpus / number of nodes) cover the node's gpu_count: every GPU.
-- An attempt holding part of a node without rank logs has no row (which GPUs it held is not
-- recorded); MIG instances are attributed by dcgm-exporter's labels in gpu_activity_windows instead.
-- cluster is the job's (jobs.cluster: a job's nodes are in its cluster, SPEC "Fleet-wide
-- identity"); every join is on (cluster, job_id) or (cluster, node). goodput_attempts holds one
-- cluster's attempts (compute runs once per cluster), so it takes its job's cluster by job_id.
CREATE OR REPLACE TABLE gpu_job_assignments AS
WITH per_node AS (
    SELECT j.cluster, g.job_id, g.attempt, g.start_us, g.end_us, unnest(g.nodes) AS node,
           g.gpus / len(g.nodes) AS gpus_per_node
    FROM goodput_attempts g
    JOIN jobs j ON j.job_id = g.job_id
    WHERE len(g.nodes) > 0 AND g.end_us > g.start_us
),
ranked AS (
    -- kept with the step summaries: the GPUs each attempt's ranks logged, without reading every rank's row
    SELECT cluster, job_id, attempt, node, gpu FROM rank_gpus WHERE cluster = getvariable('pass_cluster')
),
from_ranks AS (
    SELECT p.cluster, p.job_id, p.attempt, p.node, r.gpu, p.start_us, p.end_us, 'rank_steps' AS mapped_by
    FROM per_node p
    JOIN ranked r USING (cluster, job_id, attempt, node)
),
whole_node AS (
    SELECT p.cluster, p.job_id, p.attempt, p.node, CAST(unnest(range(n.gpu_count)) AS SMALLINT) AS gpu,
           p.start_us, p.end_us, 'whole_node' AS mapped_by
    FROM per_node p
    JOIN nodes n ON n.cluster = p.cluster AND n.node = p.node
    WHERE p.gpus_per_node >= n.gpu_count
      AND NOT EXISTS (SELECT 1 FROM ranked r
                      WHERE r.cluster = p.cluster AND r.job_id = p.job_id AND r.attempt = p.attempt
                        AND r.node = p.node)
)
SELECT a.cluster, a.job_id, a.attempt, a.node, a.gpu,
       make_timestamp(a.start_us)::TIMESTAMPTZ AS start_ts, make_timestamp(a.end_us)::TIMESTAMPTZ AS end_ts,
       a.start_us, a.end_us, a.mapped_by
FROM (SELECT * FROM from_ranks UNION ALL SELECT * FROM whole_node) a
ORDER BY a.cluster, a.node, a.gpu, a.start_us
