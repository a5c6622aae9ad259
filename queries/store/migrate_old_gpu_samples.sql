-- migrate_old_gpu_samples: the GPU samples of a table stored before compact storage, in the
-- contract's columns, to store again as series and values.
SELECT cluster, ts, node, gpu, uuid, metric, value FROM __old_gpu_samples
