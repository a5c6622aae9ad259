-- watermarks: per query key of one source, the end of the last chunk loaded: where its next run
-- starts reading.
SELECT query_key, max(watermark_ts)
FROM ingest_watermarks
WHERE source = $source
GROUP BY query_key
