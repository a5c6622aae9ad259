-- report/mig_packing: the week's MIG packing advice (mig_packing), most GPU-hours freed first.
-- Params: $week ('YYYY-Www'), $cluster ('*' = all), $limit.
SELECT workload, cluster, gpu_model, jobs, gpu_h, p95_activity, peak_memory_gib, profile,
       freed_gpu_h, gpus_freed
FROM mig_packing
WHERE week = $week AND ($cluster = '*' OR cluster = $cluster)
ORDER BY freed_gpu_h DESC, workload, cluster
LIMIT $limit
