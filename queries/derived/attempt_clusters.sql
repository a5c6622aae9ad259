-- attempt_clusters: the cluster each job attempt ran in, and the cluster of its job, so per-cluster
-- job and attempt numbers (weekly summary, goodput stack, report, exports, dashboard) all
-- attribute work the same way. A job belongs to the cluster it was landed in (SPEC "Fleet-wide
-- identity": the key is (cluster, job_id)), and so does every attempt of it, whether or not its
-- nodes are in `nodes`. A job without job_attempts rows but with a start has its implicit
-- attempt 0 here, as in goodput_attempts.
CREATE OR REPLACE TABLE attempt_clusters AS
SELECT job_id, attempt, cluster, cluster AS job_cluster
FROM (
    SELECT job_id, attempt, cluster FROM job_attempts
    UNION
    SELECT j.job_id, 0, j.cluster
    FROM jobs j
    WHERE j.start_ts IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM job_attempts a WHERE a.cluster = j.cluster AND a.job_id = j.job_id)
)
ORDER BY job_id, attempt, cluster
