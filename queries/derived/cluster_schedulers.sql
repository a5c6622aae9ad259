-- cluster_schedulers: which scheduler runs each cluster, as the data shows it (first match), for the
-- operator's commands of the remediation plan (queries/app/remediation_plan.sql):
--   kubernetes  a node of the cluster reports the kubelet's `Ready` condition (kube-state-metrics'
--               `kube_node_status_condition`; matched by name alone, since that source carries no
--               reason), or a job that ran on its nodes has a Kubernetes id (`<namespace>/<name>`,
--               as `ingest kube-jobs` names jobs)
--   slurm       a job that ran on its nodes has a Slurm id (digits, with `_N` for an array task or
--               `+N` for a heterogeneous part, as `ingest sacct` lands them)
--   unknown     neither
-- evidence says which signal decided. Whether a node reports `Ready` is read from
-- node_condition_changes (an earlier step of the pass), which holds each condition's first sample
-- and its changes: a few rows per node and condition, not every sample (tens of millions at
-- fleet scale).
CREATE OR REPLACE TABLE cluster_schedulers AS
WITH
kubelet_clusters AS (
    SELECT DISTINCT n.cluster
    FROM node_condition_changes c JOIN nodes n USING (cluster, node)
    WHERE c.condition = 'Ready'
),
job_clusters AS (
    SELECT n.cluster,
           bool_or(contains(a.job_id, '/')) AS kubernetes_jobs,
           bool_or(regexp_full_match(a.job_id, '[0-9]+([_+][0-9]+)?')) AS slurm_jobs
    FROM job_attempts a
    CROSS JOIN unnest(a.nodes) AS u(node)
    JOIN nodes n ON n.node = u.node
    GROUP BY n.cluster
)
SELECT c.cluster,
       CASE WHEN k.cluster IS NOT NULL OR coalesce(j.kubernetes_jobs, false) THEN 'kubernetes'
            WHEN coalesce(j.slurm_jobs, false) THEN 'slurm'
            ELSE 'unknown' END AS scheduler,
       CASE WHEN k.cluster IS NOT NULL THEN 'kubelet Ready condition'
            WHEN coalesce(j.kubernetes_jobs, false) THEN 'Kubernetes job id'
            WHEN coalesce(j.slurm_jobs, false) THEN 'Slurm job id'
            ELSE 'no kubelet Ready condition, no Kubernetes or Slurm job id' END AS evidence
FROM (SELECT DISTINCT cluster FROM nodes) c
LEFT JOIN kubelet_clusters k USING (cluster)
LEFT JOIN job_clusters j USING (cluster)
ORDER BY c.cluster
