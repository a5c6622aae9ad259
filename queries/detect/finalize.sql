-- The `anomalies` rows from the detectors' candidates (temporary table `anomaly_candidates`):
-- a stable id (hash of kind, entity and start), the GPU's UUID when the detector did not know it,
-- `detected_at` folded into the evidence, and the impact:
--   impact_gpu_h = GPU-hours of job attempts that ran on the entity while the anomaly was open:
--   sum over attempts of num_gpus x overlap of [attempt start, end) with [start, end), in hours,
--   open ends taken at the data horizon `$horizon`. Node and GPU findings count every attempt
--   whose node list holds the node (a synchronous job slows with its sickest GPU; for a GPU it is
--   an upper bound when small jobs share the node); rank and job findings count their own job only.
--   evidence.goodput_lost_gpu_h (node and GPU findings) = wasted progress (goodput_segments
--   category `wasted`, GPU-hours) of the attempts on the entity that ended unsuccessfully while the
--   finding was open, from `$failure_before_s` before its start to `$failure_after_s` after its end
--   (the job-failure window). Straggler findings carry their own (drag x GPUs), stalled jobs their
--   wasted GPU-hours.
WITH uuids AS (
    SELECT node, gpu, any_value(uuid) AS uuid
    FROM gpu_samples WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND uuid IS NOT NULL
    GROUP BY node, gpu
),
candidates AS (
    SELECT c.* REPLACE (coalesce(c.uuid, u.uuid) AS uuid),
           row_number() OVER () AS candidate_no
    FROM anomaly_candidates c LEFT JOIN uuids u ON u.node = c.node AND u.gpu = c.gpu
),
impact AS (
    SELECT c.candidate_no,
           sum(j.num_gpus * greatest(0, epoch(
               least(coalesce(a.end_ts, $horizon::TIMESTAMPTZ), coalesce(c.end_ts, $horizon::TIMESTAMPTZ))
               - greatest(a.start_ts, c.start_ts)))) / 3600.0 AS gpu_h
    FROM candidates c
    JOIN job_attempts a
      ON (CASE WHEN c.entity_type IN ('rank', 'job') THEN a.job_id = c.job_id ELSE list_contains(a.nodes, c.node) END)
     AND a.start_ts < coalesce(c.end_ts, $horizon::TIMESTAMPTZ)
     AND coalesce(a.end_ts, $horizon::TIMESTAMPTZ) > c.start_ts
    JOIN jobs j ON j.job_id = a.job_id
    GROUP BY c.candidate_no
),
lost AS (
    SELECT c.candidate_no, sum(CAST(g.duration_s AS DOUBLE) * g.gpus) / 3600.0 AS gpu_h
    FROM candidates c
    JOIN job_attempts a
      ON c.entity_type NOT IN ('rank', 'job') AND list_contains(a.nodes, c.node)
     AND a.end_ts IS NOT NULL AND a.state <> 'succeeded'
     AND a.end_ts >= c.start_ts - to_seconds($failure_before_s)
     AND a.end_ts <= coalesce(c.end_ts, $horizon::TIMESTAMPTZ) + to_seconds($failure_after_s)
    JOIN goodput_segments g
      ON g.job_id = a.job_id AND g.attempt = a.attempt AND g.category = 'wasted'
    GROUP BY c.candidate_no
)
SELECT substr(md5(concat_ws('|', c.kind, c.entity_type, c.node, c.gpu, c.job_id, c.rank,
                            strftime(c.start_ts, '%Y-%m-%dT%H:%M:%S.%f'))), 1, 16) AS anomaly_id,
       c.entity_type, c.node, c.gpu, c.uuid, c.job_id, c.rank, c.kind, c.start_ts, c.end_ts,
       c.score, c.severity,
       json_merge_patch(c.evidence, CASE WHEN l.gpu_h IS NULL
           THEN json_object('detected_at', c.detected_at)
           ELSE json_object('detected_at', c.detected_at, 'goodput_lost_gpu_h', round(l.gpu_h, 4)) END
       )::VARCHAR AS evidence,
       c.action, coalesce(i.gpu_h, 0.0) AS impact_gpu_h
FROM candidates c LEFT JOIN impact i USING (candidate_no) LEFT JOIN lost l USING (candidate_no)
ORDER BY c.start_ts, c.kind, c.node, c.gpu, c.job_id, c.rank
