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
-- The series of the rules' metrics, from gpu_series (the pass's cluster alone): the samples are
-- then read by integer series id, not through the gpu_samples view's strings.
rule_series AS (
    SELECT g.series_id, g.node, g.gpu, g.uuid, r.kind, r.mode, r.threshold, r.severity, r.action,
           m.metric_id
    FROM gpu_series g
    JOIN rules r USING (metric)
    JOIN (SELECT metric, row_number() OVER () AS metric_id FROM rules) m USING (metric)
),
-- Kept between computes (queries/detect/kept_cut.sql): a flag depends on the increases within the
-- trailing window before it, and an increase on its sample and the one before. So the samples
-- from one window before each node's cut on, with the last sample before them of each GPU and
-- metric (`detect_carry`, queries/detect/counter_carry.sql), find the flags from the cut on exactly
-- as all history would.
scoped_values AS (
    SELECT v.ts, v.series_id, v.value
    FROM gpu_sample_values v
    JOIN rule_series r USING (series_id)
    LEFT JOIN detect_cut c ON c.node = r.node
    WHERE v.ts >= $scan_from::TIMESTAMPTZ
      AND v.ts >= coalesce(c.flags_from, $flags_from::TIMESTAMPTZ) - to_seconds($det_counter_window_s)
    UNION ALL
    SELECT ts, series_id, value FROM detect_carry
),
-- Only a GPU and kind that can fire needs its samples ordered: a counter that changed at least
-- once (a constant counter never increases) or a level that reached the threshold. One hash
-- aggregation finds them and numbers them; the window functions below then sort narrow rows
-- (integer series, time, value) of those GPUs alone, not the fleet's strings.
active AS (
    SELECT row_number() OVER () AS series, node, gpu, kind, mode, threshold, severity, action
    FROM (
        SELECT r.node, r.gpu, r.kind, any_value(r.mode) AS mode, any_value(r.threshold) AS threshold,
               any_value(r.severity) AS severity, any_value(r.action) AS action
        FROM scoped_values v JOIN rule_series r USING (series_id)
        GROUP BY r.node, r.gpu, r.kind
        HAVING CASE WHEN any_value(r.mode) = 'level' THEN max(v.value) >= any_value(r.threshold)
                    ELSE max(v.value) > min(v.value) OR any_value(r.threshold) <= 0 END
    )
),
-- `named_series`: the series id when its UUID is known, so the windows below sort integers and the
-- episode's UUID is looked up at the end.
active_series AS (
    SELECT r.series_id, CASE WHEN r.uuid IS NOT NULL THEN r.series_id END AS named_series,
           r.metric_id, a.series
    FROM rule_series r JOIN active a USING (node, gpu, kind)
),
samples AS (
    SELECT a.series, v.ts, a.named_series, v.value,
           v.value - lag(v.value) OVER (PARTITION BY a.series, a.metric_id ORDER BY v.ts) AS delta
    FROM scoped_values v JOIN active_series a USING (series_id)
),
increases AS (
    SELECT series, ts, named_series, value AS level,
           CASE WHEN delta IS NULL THEN 0 WHEN delta < 0 THEN value ELSE delta END AS increase
    FROM samples
),
-- Several NVLink counters feed one kind: a RANGE frame takes every row of the same instant, so
-- each of them holds the instant's summed increase, and no aggregation per instant is needed first.
windowed AS (
    SELECT *,
           sum(increase) OVER (
               PARTITION BY series ORDER BY ts
               RANGE BETWEEN to_seconds($det_counter_window_s) PRECEDING AND CURRENT ROW
           ) AS window_increase
    FROM increases
),
-- One flagged sample per instant (the few flagged rows are grouped, not every sample).
flagged AS (
    SELECT w.series, w.ts, any_value(w.named_series) AS named_series,
           max(CASE WHEN a.mode = 'level' THEN w.level ELSE w.window_increase END) AS measure
    FROM windowed w JOIN active a USING (series) LEFT JOIN detect_cut c ON c.node = a.node
    WHERE CASE WHEN a.mode = 'level' THEN w.level ELSE w.window_increase END >= a.threshold
      AND w.ts >= coalesce(c.flags_from, $flags_from::TIMESTAMPTZ)
    GROUP BY w.series, w.ts
),
islands AS (
    SELECT *,
           sum(CASE WHEN prev_ts IS NULL OR ts - prev_ts > to_seconds($det_gap_s) THEN 1 ELSE 0 END)
               OVER (PARTITION BY series ORDER BY ts) AS episode
    FROM (SELECT *, lag(ts) OVER (PARTITION BY series ORDER BY ts) AS prev_ts FROM flagged)
),
episodes AS (
    SELECT series, episode, any_value(named_series) AS named_series, min(ts) AS first_ts, max(ts) AS last_ts,
           max(measure) AS max_measure, count(*) AS samples
    FROM islands
    GROUP BY series, episode
)
SELECT 'gpu' AS entity_type, a.node, a.gpu, g.uuid,
       NULL::VARCHAR AS job_id, NULL::INTEGER AS rank, a.kind,
       e.first_ts AS start_ts,
       CASE WHEN e.last_ts >= $horizon::TIMESTAMPTZ - to_seconds($det_gap_s) THEN NULL
            ELSE e.last_ts + to_seconds($det_sample_interval_s) END AS end_ts,
       e.first_ts AS detected_at,
       e.max_measure / a.threshold AS score,
       a.severity,
       json_object(
           'measure', CASE WHEN a.mode = 'level' THEN 'counter value' ELSE 'increase per window' END,
           'max_value', e.max_measure, 'threshold', a.threshold,
           'window_s', $det_counter_window_s, 'samples', e.samples
       )::VARCHAR AS evidence,
       a.action
FROM episodes e JOIN active a USING (series)
LEFT JOIN gpu_series g ON g.series_id = e.named_series
