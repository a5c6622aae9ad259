-- previous_assignments_drop: the last compute's GPU assignments, set aside for one compute, are
-- no longer needed.
DROP TABLE IF EXISTS temp.main.previous_gpu_job_assignments
