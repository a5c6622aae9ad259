-- Utilisation page: the week's MIG packing advice (mig_packing), most GPU-hours freed first.
SELECT workload, cluster, gpu_model, jobs, job_ids, gpu_h, p95_activity, peak_memory_gib, profile,
       packed_gpu_h, freed_gpu_h, gpus_freed
FROM mig_packing
WHERE week = $week AND ($cluster = '*' OR cluster = $cluster)
ORDER BY freed_gpu_h DESC, workload, cluster
