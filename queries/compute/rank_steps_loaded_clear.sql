-- rank_steps_loaded_clear: after every pass has summarised the jobs loaded since the last
-- compute (pipelines/step_summaries.py), the record of them is done.
DELETE FROM rank_steps_loaded
