-- The clusters that have a job $job (landing table jobs): one for an id unique in the fleet,
-- several for a shared one, none for an unknown one. The job page resolves `?job=` without
-- `?cluster=` with it.
SELECT DISTINCT cluster FROM jobs WHERE job_id = $job ORDER BY cluster
