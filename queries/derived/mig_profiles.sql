-- mig_profiles: the MIG profiles of each GPU model, loaded from the CSV at $mig_profiles_path
-- (bundled: queries/data/mig_profiles.csv, from NVIDIA's MIG user guide, "Supported MIG Profiles").
--   gpu_family      A100 40GB, A100 80GB, H100 80GB, H200 141GB, B200 180GB
--   model_pattern   regular expression matched against nodes.gpu_model (dcgm-exporter's modelName)
--   profile         dcgm-exporter's GPU_I_PROFILE, e.g. 3g.40gb
--   compute_slices  compute slices of the profile, of gpu_slices (7 on these GPUs)
--   memory_gb       the profile's memory, GB as its name says it
--   max_instances   how many instances of this profile one GPU holds
--   gpu_share       1 / max_instances: the share of a GPU one instance takes when a GPU is
--                   packed with instances of this profile alone (memory slices included: 1g.20gb
--                   takes a quarter of an H100, not a seventh)
CREATE OR REPLACE TABLE mig_profiles AS
SELECT gpu_family, model_pattern, profile, compute_slices, gpu_slices, memory_gb, max_instances,
       1.0 / max_instances AS gpu_share
FROM read_csv($mig_profiles_path, header = true, auto_detect = false,
    columns = {'gpu_family': 'VARCHAR', 'model_pattern': 'VARCHAR', 'profile': 'VARCHAR',
               'compute_slices': 'INTEGER', 'gpu_slices': 'INTEGER', 'memory_gb': 'DOUBLE',
               'max_instances': 'INTEGER'})
