-- mig_packing_basis: what mig_packing's rows depend on besides the activity windows and the job
-- records: the MIG profiles (the CSV at $mig_profiles_path) and the GPU model of each node of the
-- pass's cluster. Part of the kept rows' basis (pipelines/kept_rows.py): a new profile, a node
-- added or a model corrected builds every week again.
SELECT
    (SELECT md5(coalesce(string_agg(
        concat_ws('|', gpu_family, model_pattern, profile, compute_slices, gpu_slices, memory_gb,
                  max_instances),
        ',' ORDER BY model_pattern, profile), ''))
     FROM mig_profiles) AS profiles,
    (SELECT md5(coalesce(string_agg(node || '|' || coalesce(gpu_model, ''), ',' ORDER BY node), ''))
     FROM nodes
     WHERE cluster = getvariable('pass_cluster')) AS node_models
