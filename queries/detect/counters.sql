-- Error-counter and error-gauge detectors on DCGM samples, one episode per GPU and kind.
-- Counters (ECC single-bit, PCIe replay, NVLink errors): per sample the increase since the
-- previous sample, where a drop is a counter reset (reboot / GPU reset) and counts as the new
-- value, never as a negative rate (Prometheus `increase` semantics). A sample is flagged when the
-- increase over the trailing `$det_counter_window_s` seconds reaches the kind's threshold.
-- Levels (ECC double-bit volatile total, row-remap failure/pending): flagged while the value is
-- >= the threshold; the volatile DBE total only returns to 0 on a GPU reset, which is exactly the
-- remediation that closes the anomaly.
-- Flagged samples closer than `$det_gap_s` seconds form one episode: start = first flagged
-- sample (that is when the rule fired), end = last flagged sample + one scrape interval, NULL
-- (open) when the episode reaches the data horizon `$horizon`.
-- Score = the largest windowed increase (or level) divided by the threshold (>= 1).
-- Output: the common anomaly-candidate columns (see pipelines/detectors/__init__.py).
WITH rules(metric, kind, mode, threshold, severity, action) AS (
    VALUES
        ('DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'ecc_sbe_rate', 'counter', $det_ecc_sbe_per_window, 'warn', 'watch'),
        ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'ecc_dbe', 'level', $det_ecc_dbe_per_window, 'critical', 'reset_gpu'),
        ('DCGM_FI_DEV_ROW_REMAP_FAILURE', 'row_remap_failure', 'level', 1.0, 'critical', 'replace'),
        ('DCGM_FI_DEV_ROW_REMAP_PENDING', 'row_remap_pending', 'level', 1.0, 'warn', 'reset_gpu'),
        ('DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'pcie_replay_rate', 'counter', $det_pcie_replay_per_window, 'warn', 'cordon'),
        ('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL', 'nvlink_error_rate', 'counter', $det_nvlink_errors_per_window, 'warn', 'cordon'),
        ('DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL', 'nvlink_error_rate', 'counter', $det_nvlink_errors_per_window, 'warn', 'cordon'),
        ('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL', 'nvlink_error_rate', 'counter', $det_nvlink_errors_per_window, 'warn', 'cordon'),
        ('DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL', 'nvlink_error_rate', 'counter', $det_nvlink_errors_per_window, 'warn', 'cordon')
),
-- Only a GPU and kind that can fire needs its samples ordered: a counter that changed at least
-- once (a constant counter never increases) or a level that reached the threshold. One hash
-- aggregation finds them; the sorts below run on their samples alone (a few GPUs, not the fleet).
active AS (
    SELECT s.node, s.gpu, r.kind
    FROM gpu_samples s JOIN rules r USING (metric)
    GROUP BY s.node, s.gpu, r.kind
    HAVING CASE WHEN any_value(r.mode) = 'level' THEN max(s.value) >= any_value(r.threshold)
                ELSE max(s.value) > min(s.value) OR any_value(r.threshold) <= 0 END
),
samples AS (
    SELECT s.ts, s.node, s.gpu, s.uuid, s.metric, s.value, r.kind, r.mode, r.threshold, r.severity, r.action,
           s.value - lag(s.value) OVER (PARTITION BY s.node, s.gpu, s.metric ORDER BY s.ts) AS delta
    FROM gpu_samples s JOIN rules r USING (metric)
    SEMI JOIN active a ON a.node = s.node AND a.gpu = s.gpu AND a.kind = r.kind
),
increases AS (
    -- Several NVLink counters feed one kind: add their increases per instant.
    SELECT ts, node, gpu, any_value(uuid) AS uuid, kind, any_value(mode) AS mode,
           any_value(threshold) AS threshold, any_value(severity) AS severity, any_value(action) AS action,
           sum(CASE WHEN delta IS NULL THEN 0 WHEN delta < 0 THEN value ELSE delta END) AS increase,
           max(value) AS level,
           bool_or(delta < 0) AS reset
    FROM samples
    GROUP BY ALL
),
windowed AS (
    SELECT *,
           sum(increase) OVER (
               PARTITION BY node, gpu, kind ORDER BY ts
               RANGE BETWEEN to_seconds($det_counter_window_s) PRECEDING AND CURRENT ROW
           ) AS window_increase
    FROM increases
),
flagged AS (
    SELECT * FROM (
        SELECT *, CASE WHEN mode = 'level' THEN level ELSE window_increase END AS measure FROM windowed)
    WHERE measure >= threshold
),
islands AS (
    SELECT *,
           sum(CASE WHEN prev_ts IS NULL OR ts - prev_ts > to_seconds($det_gap_s) THEN 1 ELSE 0 END)
               OVER (PARTITION BY node, gpu, kind ORDER BY ts) AS episode
    FROM (SELECT *, lag(ts) OVER (PARTITION BY node, gpu, kind ORDER BY ts) AS prev_ts FROM flagged)
)
SELECT 'gpu' AS entity_type, node, gpu, any_value(uuid) AS uuid,
       NULL::VARCHAR AS job_id, NULL::INTEGER AS rank, kind,
       min(ts) AS start_ts,
       CASE WHEN max(ts) >= $horizon::TIMESTAMPTZ - to_seconds($det_gap_s) THEN NULL
            ELSE max(ts) + to_seconds($det_sample_interval_s) END AS end_ts,
       min(ts) AS detected_at,
       max(measure) / any_value(threshold) AS score,
       any_value(severity) AS severity,
       json_object(
           'measure', CASE WHEN any_value(mode) = 'level' THEN 'counter value' ELSE 'increase per window' END,
           'max_value', max(measure), 'threshold', any_value(threshold),
           'window_s', $det_counter_window_s, 'samples', count(*)
       )::VARCHAR AS evidence,
       any_value(action) AS action
FROM islands
GROUP BY node, gpu, kind, episode
