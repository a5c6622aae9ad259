-- Utilisation page: jobs that ran in the week [$week_start, $week_end) with idle allocated
-- GPU-hours (job_utilisation, whole-job figures), most idle first. A job only dcgm-exporter's
-- labels name (no `jobs` row) is shown when its telemetry falls in the week.
SELECT u.job_id, u.cluster, u.name, u.team, u.queue, u.num_gpus, u.allocated_gpu_h, u.measured_gpu_h,
       u.busy_gpu_h, u.mean_activity, u.p95_activity, u.idle_gpu_h, u.gpus_mapped, u.gpus_used,
       u.peak_memory_gib, u.mapped_by, u.on_mig
FROM job_utilisation u
LEFT JOIN jobs j USING (cluster, job_id)
WHERE u.idle_gpu_h > 0
  AND ($cluster = '*' OR u.cluster = $cluster)
  AND CASE WHEN j.job_id IS NOT NULL
           THEN coalesce(j.start_ts, j.submit_ts) < $week_end AND coalesce(j.end_ts, $week_end) >= $week_start
           ELSE EXISTS (SELECT 1 FROM gpu_activity_windows w WHERE w.cluster = u.cluster AND w.job_id = u.job_id
                        AND w.start_ts >= $week_start AND w.start_ts < $week_end) END
ORDER BY u.idle_gpu_h DESC, u.job_id, u.cluster
LIMIT 200
