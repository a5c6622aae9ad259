-- cluster_job_map: per job id, the cluster it maps to when it maps to one (`n` = 1), else the
-- clusters it is in.
CREATE OR REPLACE TEMP TABLE __job_cluster AS
SELECT job_id, min(cluster) AS cluster, count(*) AS n, list_sort(list(cluster)) AS clusters
FROM __job_pairs
GROUP BY job_id
