-- goodput_kept_rows: after the pass built goodput_steps, job_stalls, goodput_segments and
-- job_goodput for the jobs whose inputs changed (queries/derived/goodput_jobs.sql), add the
-- last compute's rows of the others (set aside before the passes as temp.previous_<table>).
INSERT INTO goodput_steps BY NAME
SELECT * EXCLUDE (cluster) FROM temp.main.previous_goodput_steps
WHERE cluster = getvariable('pass_cluster') AND job_id IN (SELECT job_id FROM goodput_jobs WHERE kept);

INSERT INTO job_stalls BY NAME
SELECT * EXCLUDE (cluster) FROM temp.main.previous_job_stalls
WHERE cluster = getvariable('pass_cluster') AND job_id IN (SELECT job_id FROM goodput_jobs WHERE kept);

INSERT INTO goodput_segments BY NAME
SELECT * EXCLUDE (cluster) FROM temp.main.previous_goodput_segments
WHERE cluster = getvariable('pass_cluster') AND job_id IN (SELECT job_id FROM goodput_jobs WHERE kept);

INSERT INTO job_goodput BY NAME
SELECT * EXCLUDE (cluster) FROM temp.main.previous_job_goodput
WHERE cluster = getvariable('pass_cluster') AND job_id IN (SELECT job_id FROM goodput_jobs WHERE kept);
