-- rank_jobs_kept: how many of the pass's jobs keep the last compute's rank rows.
SELECT count(*) FILTER (WHERE kept) FROM rank_slowdown_jobs
