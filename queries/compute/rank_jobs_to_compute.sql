-- rank_jobs_to_compute: the pass's jobs whose rank inputs changed, in order.
SELECT job_id FROM rank_slowdown_jobs WHERE NOT kept ORDER BY job_id
