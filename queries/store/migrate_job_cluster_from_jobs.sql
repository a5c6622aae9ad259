-- migrate_job_cluster_from_jobs: each job's cluster as the jobs table names it, for the job tables
-- gaining their cluster column.
CREATE TEMP TABLE __job_cluster AS SELECT job_id, min(cluster) AS cluster FROM jobs GROUP BY 1
