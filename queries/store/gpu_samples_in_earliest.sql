-- gpu_samples_in_earliest: the first sample of the GPU samples being stored (the temp view
-- __gpu_samples_in), noted for the next compute's kept tables.
SELECT min(ts) FROM __gpu_samples_in
