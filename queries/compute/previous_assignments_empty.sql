-- previous_assignments_empty: no assignments from a last compute (an older database): every
-- cluster's activity windows are built again.
CREATE TEMP TABLE previous_gpu_job_assignments (
    cluster VARCHAR, job_id VARCHAR, attempt INTEGER, node VARCHAR, gpu SMALLINT,
    start_us BIGINT, end_us BIGINT, mapped_by VARCHAR
)
