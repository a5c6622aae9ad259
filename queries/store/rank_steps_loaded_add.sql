-- Note, in the load's transaction, the jobs of a batch of rank steps (the temporary view
-- `__rank_steps_in`): the next compute summarises their steps again (pipelines/step_summaries.py).
INSERT INTO rank_steps_loaded
SELECT DISTINCT cluster, job_id FROM __rank_steps_in
