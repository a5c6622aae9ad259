-- attempt_clusters: the cluster each job attempt ran in, and the cluster of its job, so per-cluster
-- job and attempt numbers (weekly summary, report, exports) all attribute work the same way.
-- An attempt's cluster is the cluster most of its nodes belong to (ties: the first by name); a
-- job's is the cluster most of the nodes of all its attempts belong to. Attempts on no known node
-- (not in `nodes`) have no row: they count only in all-clusters ('*') numbers.
CREATE OR REPLACE TABLE attempt_clusters AS
WITH attempt_node_cluster AS (
    SELECT a.job_id, a.attempt, n.cluster, count(*) AS nodes_in_cluster
    FROM job_attempts a
    CROSS JOIN unnest(a.nodes) AS u(node)
    JOIN nodes n ON n.node = u.node
    GROUP BY ALL
),
job_cluster AS (
    SELECT job_id, first(cluster ORDER BY nodes_in_cluster DESC, cluster) AS job_cluster
    FROM (SELECT job_id, cluster, sum(nodes_in_cluster) AS nodes_in_cluster
          FROM attempt_node_cluster GROUP BY ALL)
    GROUP BY ALL
)
SELECT a.job_id, a.attempt,
       first(a.cluster ORDER BY a.nodes_in_cluster DESC, a.cluster) AS cluster,
       any_value(j.job_cluster) AS job_cluster
FROM attempt_node_cluster a
JOIN job_cluster j USING (job_id)
GROUP BY a.job_id, a.attempt
ORDER BY a.job_id, a.attempt
