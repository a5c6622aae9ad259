-- Peer detectors: a GPU under load compared with the other loaded GPUs of its node (same model:
-- a node has one GPU model) at the same scrape, by robust z-score z = (x - median) / (1.4826 * MAD).
--   throttling        SM clock below peers: z <= -$det_peer_z and at least `$det_peer_min_rel_dev`
--                     (fraction) below the peers' median. Power alone is not used: GPUs of one node
--                     running different jobs draw different power; clocks under load do not differ.
--   temp_above_peers  GPU temperature z >= $det_peer_z and >= `$det_peer_temp_min_dev_c` degrees C
--                     above, while its power is not above its peers' (more heat for the same or
--                     less work: cooling, not a heavier job).
-- The MAD is floored at 1 % of the peers' median (1 C for temperature): identical GPUs have MAD ~ 0.
-- Under load = utilisation >= `$det_load_util_min` %; a comparison needs >= `$det_peer_min_count`
-- loaded GPUs (the GPU included). The relative/absolute minimum keeps identical GPUs (MAD ~ 0) quiet.
-- Persistence: a sample counts only when the deviation holds in >= `$det_peer_min_share` of the GPU's
-- loaded samples over the trailing `$det_peer_window_s` seconds (and that window holds at least half
-- its expected samples), so a noisy but healthy GPU's single outliers never fire.
-- Episodes: persistent samples closer than `$det_peer_merge_gap_s` seconds (a throttled GPU that
-- idles between jobs is one finding); end = last + one scrape,
-- NULL when at the data horizon. Score = the median |z| of the episode's deviating samples.
-- Kept between computes (queries/detect/kept_cut.sql): a flag depends on its own scrape and the
-- trailing window before it, so the scrapes from one window before each node's cut on find the
-- flags from the cut on exactly as all history would.
WITH loaded AS (
    -- The scrapes of loaded GPUs (temporary table of queries/detect/gpu_scrapes.sql).
    SELECT s.ts, s.node, s.gpu, s.clock, s.power, s.temp, s.util_series
    FROM detect_gpu_scrapes s LEFT JOIN detect_cut c USING (node)
    WHERE s.util >= $det_load_util_min
      AND s.ts >= $scan_from::TIMESTAMPTZ
      AND s.ts >= coalesce(c.flags_from, $flags_from::TIMESTAMPTZ) - to_seconds($det_peer_window_s)
),
-- Peer statistics per node and scrape with GROUP BY (a window per (node, ts) would sort every row).
peer_medians AS (
    SELECT node, ts, count(*) AS peer_count,
           median(clock) AS clock_med, median(power) AS power_med, median(temp) AS temp_med
    FROM loaded
    GROUP BY node, ts
    HAVING count(*) >= $det_peer_min_count
),
with_medians AS (
    SELECT l.*, m.peer_count, m.clock_med, m.power_med, m.temp_med
    FROM loaded l JOIN peer_medians m USING (node, ts)
),
peer_mads AS (
    SELECT node, ts,
           median(abs(clock - clock_med)) AS clock_mad,
           median(abs(power - power_med)) AS power_mad,
           median(abs(temp - temp_med)) AS temp_mad
    FROM with_medians
    GROUP BY node, ts
),
spread AS (
    SELECT w.*, d.clock_mad, d.power_mad, d.temp_mad
    FROM with_medians w JOIN peer_mads d USING (node, ts)
),
scored AS (
    SELECT ts, node, gpu, util_series, clock, clock_med, power, power_med, temp, temp_med, peer_count,
           (clock - clock_med) / greatest(1.4826 * clock_mad, 0.01 * abs(clock_med), 1e-9) AS clock_z,
           (power - power_med) / greatest(1.4826 * power_mad, 0.01 * abs(power_med), 1e-9) AS power_z,
           (temp - temp_med) / greatest(1.4826 * temp_mad, 1.0) AS temp_z
    FROM spread
),
deviations AS (
    SELECT ts, node, gpu, 'throttling' AS kind,
           coalesce(clock_z <= -$det_peer_z AND clock_med - clock >= $det_peer_min_rel_dev * clock_med,
                    false) AS deviates,
           -clock_z AS z,
           util_series, clock, clock_med, power, power_med, temp, temp_med, peer_count
    FROM scored
    UNION ALL
    SELECT ts, node, gpu, 'temp_above_peers',
           coalesce(temp_z >= $det_peer_z AND temp - temp_med >= $det_peer_temp_min_dev_c
                    AND power <= power_med * (1 + $det_peer_min_rel_dev), false),
           temp_z, util_series, clock, clock_med, power, power_med, temp, temp_med, peer_count
    FROM scored
),
-- Only a (GPU, kind) that deviates at least once can be flagged: the trailing window (a sort)
-- runs on those series alone.
deviating AS (
    SELECT DISTINCT node, gpu, kind FROM deviations WHERE deviates
),
persistent AS (
    SELECT *,
           avg(deviates::INTEGER) OVER recent AS deviating_share,
           count(*) OVER recent AS recent_samples
    FROM deviations SEMI JOIN deviating USING (node, gpu, kind)
    WINDOW recent AS (PARTITION BY node, gpu, kind ORDER BY ts
                      RANGE BETWEEN to_seconds($det_peer_window_s) PRECEDING AND CURRENT ROW)
),
flagged AS (
    SELECT p.*, lag(p.ts) OVER (PARTITION BY p.node, p.gpu, p.kind ORDER BY p.ts) AS prev_ts
    FROM persistent p LEFT JOIN detect_cut c USING (node)
    WHERE p.deviates AND p.deviating_share >= $det_peer_min_share
      AND p.recent_samples >= 0.5 * $det_peer_window_s / $det_sample_interval_s
      AND p.ts >= coalesce(c.flags_from, $flags_from::TIMESTAMPTZ)
),
islands AS (
    SELECT *,
           sum(CASE WHEN prev_ts IS NULL OR ts - prev_ts > to_seconds($det_peer_merge_gap_s) THEN 1 ELSE 0 END)
               OVER (PARTITION BY node, gpu, kind ORDER BY ts) AS episode
    FROM flagged
),
episodes AS (
    SELECT node, gpu, kind,
           min(ts) AS start_ts, max(ts) AS last_ts, arg_min(util_series, ts) AS start_series,
           median(z) AS score,
           json_object(
               'sm_clock_mhz', round(median(clock), 1), 'peer_sm_clock_mhz', round(median(clock_med), 1),
               'power_w', round(median(power), 1), 'peer_power_w', round(median(power_med), 1),
               'temp_c', round(median(temp), 1), 'peer_temp_c', round(median(temp_med), 1),
               'peers', max(peer_count), 'samples', count(*), 'robust_z', round(median(z), 2)
           )::VARCHAR AS evidence
    FROM islands
    GROUP BY node, gpu, kind, episode
),
SELECT 'gpu' AS entity_type, e.node, e.gpu, u.uuid,
       NULL::VARCHAR AS job_id, NULL::INTEGER AS rank, e.kind,
       e.start_ts,
       CASE WHEN e.last_ts >= $horizon::TIMESTAMPTZ - to_seconds($det_gap_s) THEN NULL
            ELSE e.last_ts + to_seconds($det_sample_interval_s) END AS end_ts,
       e.start_ts AS detected_at,
       e.score,
       'warn' AS severity,
       e.evidence,
       CASE WHEN e.kind = 'throttling' THEN 'cordon' ELSE 'watch' END AS action
FROM episodes e
-- The GPU's UUID when the episode started: that scrape's utilisation series names it. Looked up
-- for the few episodes only, so the shared per-scrape table carries no UUID string for the
-- fleet's every scrape (memory at 4,096 GPUs).
LEFT JOIN gpu_series u ON u.series_id = e.start_series
