-- watermark_set: a query key's new watermark, replacing the old one.
DELETE FROM ingest_watermarks WHERE source = $source AND query_key = $key;
INSERT INTO ingest_watermarks VALUES ($source, $key, $mark);
