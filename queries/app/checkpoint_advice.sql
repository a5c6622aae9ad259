-- The week's checkpoint advice (checkpoint_advice), one row per recurring job key ($week),
-- most GPU-hours to regain first. Intervals and save cost in seconds, lost fractions 0-1,
-- regained_gpu_h GPU-hours per week. Fleet-wide: the interruption rate is the fleet's.
SELECT job_key, jobs, gpus, nodes, saves, save_cost_s, current_interval_s, optimal_interval_s,
    young_interval_s, mtbi_h, lost_fraction_current, lost_fraction_optimal, allocated_gpu_h,
    regained_gpu_h
FROM checkpoint_advice
WHERE week = $week
ORDER BY regained_gpu_h DESC NULLS LAST, job_key
