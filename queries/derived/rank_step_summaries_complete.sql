-- rank_step_summaries_complete: whether the pass's cluster's step summaries count every rank step
-- it stores (rank steps are only ever added, so a load that did not note its jobs, made by another
-- program or an older gpufleet, shows here as rows no summary counts).
SELECT (SELECT coalesce(sum(ranks), 0) FROM rank_step_summaries
        WHERE cluster = getvariable('pass_cluster'))
       = (SELECT count(*) FROM rank_steps)
