-- The `anomalies` rows from the detectors' candidates (temporary table `anomaly_candidates`):
-- a stable id (hash of kind, entity and start), the GPU's UUID when the detector did not know it,
-- `detected_at` folded into the evidence. impact_gpu_h and goodput_lost_gpu_h are filled later, by
-- queries/detect/impact.sql, once job outcomes are known (0 here; a straggler's goodput lost is its
-- own, from its evidence: drag x GPUs; a stalled job's, its wasted GPU-hours).
WITH uuids AS (
    -- From the series, not the samples: each (node, gpu, uuid, metric) is one gpu_series row.
    SELECT node, gpu, any_value(uuid) AS uuid
    FROM gpu_series WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND uuid IS NOT NULL
    GROUP BY node, gpu
),
candidates AS (
    SELECT c.* REPLACE (coalesce(c.uuid, u.uuid) AS uuid),
           row_number() OVER () AS candidate_no
    FROM anomaly_candidates c LEFT JOIN uuids u ON u.node = c.node AND u.gpu = c.gpu
)
SELECT substr(md5(concat_ws('|', c.kind, c.entity_type, c.node, c.gpu, c.job_id, c.rank,
                            strftime(c.start_ts, '%Y-%m-%dT%H:%M:%S.%f'))), 1, 16) AS anomaly_id,
       c.entity_type, c.node, c.gpu, c.uuid, c.job_id, c.rank, c.kind, c.start_ts, c.end_ts,
       c.score, c.severity,
       json_merge_patch(c.evidence, json_object('detected_at', c.detected_at))::VARCHAR AS evidence,
       c.action, 0.0 AS impact_gpu_h,
       coalesce(TRY_CAST(json_extract(c.evidence, '$.goodput_lost_gpu_h') AS DOUBLE), 0.0) AS goodput_lost_gpu_h
FROM candidates c
ORDER BY c.start_ts, c.kind, c.node, c.gpu, c.job_id, c.rank
