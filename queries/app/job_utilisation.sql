-- Job page ($cluster, $job): the job's utilisation (job_utilisation, whole job): GPU-hours allocated, measured,
-- busy and idle, mean and p95 activity, GPUs held and used, memory high-water mark.
SELECT * FROM job_utilisation WHERE cluster = $cluster AND job_id = $job
