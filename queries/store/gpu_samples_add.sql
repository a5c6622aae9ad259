-- gpu_samples_add: store the samples in `__gpu_samples_in` (contract columns, keys already new)
-- as (ts, series id, value); gpu_series_add has given every series its id.
-- In (ts, series id) order: time ranges stay together (a compute's "samples since" reads few
-- row groups) and, ids running metric by metric, so do one metric's values (docs/performance.md
-- "How samples are stored").
INSERT INTO gpu_sample_values
SELECT i.ts, s.series_id, i.value
FROM __gpu_samples_in i
JOIN gpu_series s
  ON s.cluster = i.cluster AND s.node = i.node AND s.gpu = i.gpu AND s.metric = i.metric
 AND s.uuid IS NOT DISTINCT FROM i.uuid
ORDER BY i.ts, s.series_id
