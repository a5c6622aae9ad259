-- samples_loaded_clear: every kept table has read the samples loaded since the last compute.
DELETE FROM gpu_samples_loaded
