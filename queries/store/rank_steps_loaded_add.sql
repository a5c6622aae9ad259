-- Note, in the load's transaction, the jobs of a batch of rank steps (the temporary table
-- `__batch_jobs`): the next compute summarises their steps again (pipelines/step_summaries.py).
INSERT INTO rank_steps_loaded
SELECT cluster, job_id FROM __batch_jobs
