-- series_clusters: the clusters that have GPU series, in order (one pass of a kept rollup each).
SELECT DISTINCT cluster FROM gpu_series ORDER BY 1
