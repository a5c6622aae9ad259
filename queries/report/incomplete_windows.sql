-- Telemetry incomplete from the store during the week: windows [start_ts, end_ts) (UTC) a
-- Prometheus-compatible store answered only in part (loaded with --allow-partial, not yet
-- fetched complete) that overlap the ISO week starting $week_start (a DATE, Monday).
-- Gaps and `unknown` hours there may come from the store, not the fleet.
SELECT
    start_ts,
    end_ts,
    string_agg(query_key, ', ' ORDER BY query_key) AS queries,
    min(warning) AS store_said
FROM ingest_incomplete
WHERE start_ts < CAST($week_start AS TIMESTAMPTZ) + INTERVAL 7 DAY
  AND end_ts > CAST($week_start AS TIMESTAMPTZ)
GROUP BY start_ts, end_ts
ORDER BY start_ts
