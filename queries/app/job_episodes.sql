-- Straggler episodes of one attempt ($cluster, $job, $attempt), from rank_episodes: the rank, its host,
-- the first and last step of the spell, when it started and ended (UTC; `open` = it ran to the
-- attempt's last logged step), its median step-time ratio to the reference and its drag
-- (seconds the job waited on it inside the episode).
SELECT rank, episode, node, gpu, first_step, last_step, start_ts, end_ts, reaches_end AS open,
       median_ratio, drag_s
FROM rank_episodes
WHERE cluster = $cluster AND job_id = $job AND attempt = $attempt
ORDER BY rank, first_step
