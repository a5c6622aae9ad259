-- cluster_job_pairs: job -> cluster pairs: a job's own value in the batch (__job_explicit), else
-- the clusters every node of its attempts belongs to (__job_nodes against __node_pairs), else the
-- stored job's.
CREATE OR REPLACE TEMP TABLE __job_pairs AS
WITH from_nodes AS (
    SELECT j.job_id, p.cluster
    FROM __job_nodes j
    JOIN __node_pairs p USING (node)
    GROUP BY j.job_id, p.cluster
    HAVING count(DISTINCT j.node) = (SELECT count(DISTINCT node) FROM __job_nodes k WHERE k.job_id = j.job_id)
)
SELECT * FROM __job_explicit
UNION
SELECT * FROM from_nodes WHERE job_id NOT IN (SELECT job_id FROM __job_explicit)
UNION
SELECT job_id, cluster FROM jobs
WHERE job_id NOT IN (SELECT job_id FROM __job_explicit)
    AND job_id NOT IN (SELECT job_id FROM from_nodes)
