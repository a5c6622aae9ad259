-- report/checkpoints: the week's checkpoint advice (checkpoint_advice) for $week_start's ISO week,
-- the $limit recurring jobs with the most GPU-hours to regain. Fleet-wide (the interruption rate is
-- the fleet's), whatever the cluster. Intervals and save cost in seconds, lost fractions 0-1.
SELECT job_key, jobs, gpus, nodes, save_cost_s, current_interval_s, optimal_interval_s, mtbi_h,
       lost_fraction_current, lost_fraction_optimal, regained_gpu_h
FROM checkpoint_advice
WHERE week = strftime($week_start::DATE, '%G-W%V')
ORDER BY regained_gpu_h DESC NULLS LAST, job_key
LIMIT $limit
