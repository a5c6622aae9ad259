-- Straggler episodes of the ranks that ran on the node ($cluster, $node) and overlapped
-- [$week_start, $week_end), newest first: job, attempt, rank and GPU, the spell's steps and
-- times (UTC), its median step-time ratio and drag (seconds). Repeating spells on one host
-- point at the host (cooling, a switch port, a shared neighbour) rather than one job.
SELECT job_id, attempt, rank, gpu, episode, first_step, last_step, start_ts, end_ts,
       reaches_end AS open, median_ratio, drag_s
FROM rank_episodes
WHERE cluster = $cluster AND node = $node AND start_ts < $week_end AND end_ts > $week_start
ORDER BY start_ts DESC, job_id, rank
