-- previous_assignments_keep: set the last compute's GPU assignments aside before the first pass
-- replaces them (queries/derived/gpu_activity_windows.sql finds the rows whose holder changed).
CREATE TEMP TABLE previous_gpu_job_assignments AS
SELECT cluster, job_id, attempt, node, gpu, start_us, end_us, mapped_by
FROM main.gpu_job_assignments
