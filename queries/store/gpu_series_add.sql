-- gpu_series_add: give every series of the samples in `__gpu_samples_in` that gpu_series does not
-- hold yet its id (the next integers, in the series' sort order so ids are the same whatever
-- order a batch's rows came in). A series is (cluster, node, gpu, uuid, metric): a GPU swapped
-- under the same index is a new series, so the view still shows each sample's own uuid.
-- Ids run metric by metric (then node, GPU): gpu_samples_add stores each scrape's values in id
-- order, so one metric's values of many GPUs sit side by side and compress several times better
-- than a GPU's mix of temperatures, clocks and counters.
INSERT INTO gpu_series
SELECT
    (SELECT coalesce(max(series_id), 0) FROM gpu_series)
        + row_number() OVER (ORDER BY cluster, metric, node, gpu, uuid NULLS FIRST),
    cluster, node, gpu, uuid, metric
FROM (SELECT DISTINCT cluster, node, gpu, uuid, metric FROM __gpu_samples_in) s
WHERE NOT EXISTS (
    SELECT 1 FROM gpu_series t
    WHERE t.cluster = s.cluster AND t.node = s.node AND t.gpu = s.gpu AND t.metric = s.metric
      AND t.uuid IS NOT DISTINCT FROM s.uuid
)
