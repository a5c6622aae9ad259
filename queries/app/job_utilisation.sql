-- Job page: the job's utilisation (job_utilisation, whole job): GPU-hours allocated, measured,
-- busy and idle, mean and p95 activity, GPUs held and used, memory high-water mark.
SELECT * FROM job_utilisation WHERE job_id = $job
