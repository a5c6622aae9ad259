-- fleet_span: the nodes and GPUs of the fleet and the first and last node-condition sample (the
-- one-screen summary of `gpufleet demo --no-app`).
SELECT
    (SELECT count(*) FROM nodes) AS nodes,
    (SELECT coalesce(sum(gpu_count), 0) FROM nodes) AS gpus,
    (SELECT min(ts) FROM node_conditions) AS first_ts,
    (SELECT max(ts) FROM node_conditions) AS last_ts
