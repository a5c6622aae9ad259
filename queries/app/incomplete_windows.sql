-- Telemetry incomplete from the store: windows a Prometheus-compatible store (Thanos, Mimir,
-- VictoriaMetrics) answered only in part, loaded with `ingest prometheus --allow-partial`.
-- Series may be missing there, so a telemetry gap in such a window may be the store's, not
-- the fleet's. Every later ingest fetches them again; a complete answer removes the row.
-- One row per source and window [start_ts, end_ts) (UTC); `queries` lists the query keys.
SELECT
    source,
    start_ts,
    end_ts,
    string_agg(query_key, ', ' ORDER BY query_key) AS queries,
    min(warning) AS store_said
FROM ingest_incomplete
GROUP BY source, start_ts, end_ts
ORDER BY start_ts, source
