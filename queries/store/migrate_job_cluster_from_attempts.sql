-- migrate_job_cluster_from_attempts: while job_attempts gains its cluster column, each job's
-- cluster is the first cluster of the nodes its attempts ran on (__old_job_attempts: the table
-- before the upgrade).
CREATE TEMP TABLE __job_cluster AS
SELECT a.job_id, min(n.cluster) AS cluster
FROM (SELECT DISTINCT job_id, unnest(nodes) AS node FROM __old_job_attempts) a
JOIN nodes n USING (node)
GROUP BY a.job_id
