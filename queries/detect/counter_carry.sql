-- The counter detector's carry (queries/detect/counters.sql): for every GPU and metric of the
-- pass's cluster, its last sample before the samples the detector reads (one counter window before
-- its node's cut, queries/detect/kept_cut.sql), so the increase of the first sample read is the
-- one all history gives. Looked for from $carry_from on (the time filter skips older storage);
-- a GPU and metric with samples read but none in that span (a GPU silent for longer, or new) is
-- looked for in all earlier samples by the second statement. Empty when not $incremental.
-- Params: $incremental, $flags_from, $carry_from, $det_counter_window_s.
CREATE OR REPLACE TEMP TABLE detect_carry AS
SELECT arg_max(v.series_id, v.ts) AS series_id, max(v.ts) AS ts, arg_max(v.value, v.ts) AS value
FROM gpu_sample_values v
JOIN gpu_series g USING (series_id)
LEFT JOIN detect_cut c ON c.node = g.node
WHERE $incremental AND v.ts >= $carry_from::TIMESTAMPTZ
  AND v.ts < coalesce(c.flags_from, $flags_from::TIMESTAMPTZ) - to_seconds($det_counter_window_s)
GROUP BY g.node, g.gpu, g.metric;

CREATE OR REPLACE TEMP TABLE detect_carry_missing AS
SELECT DISTINCT g.node, g.gpu, g.metric, coalesce(c.flags_from, $flags_from::TIMESTAMPTZ)
           - to_seconds($det_counter_window_s) AS read_from
FROM gpu_sample_values v
JOIN gpu_series g USING (series_id)
LEFT JOIN detect_cut c ON c.node = g.node
WHERE $incremental AND v.ts >= $carry_from::TIMESTAMPTZ
  AND v.ts >= coalesce(c.flags_from, $flags_from::TIMESTAMPTZ) - to_seconds($det_counter_window_s)
  AND NOT EXISTS (
      SELECT 1 FROM detect_carry k JOIN gpu_series kg USING (series_id)
      WHERE kg.node = g.node AND kg.gpu = g.gpu AND kg.metric = g.metric
  );

INSERT INTO detect_carry
SELECT arg_max(v.series_id, v.ts), max(v.ts), arg_max(v.value, v.ts)
FROM gpu_sample_values v
JOIN gpu_series g USING (series_id)
JOIN detect_carry_missing m ON m.node = g.node AND m.gpu = g.gpu AND m.metric = g.metric
WHERE v.ts < $carry_from::TIMESTAMPTZ
GROUP BY g.node, g.gpu, g.metric;

DROP TABLE detect_carry_missing;
