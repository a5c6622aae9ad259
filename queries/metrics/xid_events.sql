-- xid_events: XIDs, one row per XID when two sources reported it (docs/metrics.md "XIDs seen by
-- two sources"). A node's kernel log (source `kernel-log`) and dcgm-exporter (through
-- Prometheus, or a file) both report an XID the driver raised: the exporter at its next scrape,
-- the log at the second it happened. An exporter event is the kernel log's XID when the log has
-- one of the same cluster, node, GPU and code at most 300 s before it (the exporter's count
-- window) or 60 s after it (the two clocks may differ); the log's row stands: exact time, every
-- line. A log line whose bus id mapped to no GPU (gpu NULL) gives way to an
-- exporter event of the same code in that span that names its GPU. Every other event stands.
-- Columns: those of gpu_events. Other queries include it as a subquery.
SELECT e.*
FROM gpu_events e
WHERE e.kind = 'xid'
  AND NOT (
        e.source IS DISTINCT FROM 'kernel-log'
        AND EXISTS (
            FROM gpu_events k
            WHERE k.kind = 'xid' AND k.source = 'kernel-log'
              AND k.cluster = e.cluster AND k.node = e.node AND k.code = e.code AND k.gpu = e.gpu
              AND e.ts >= k.ts - INTERVAL 60 SECOND AND e.ts <= k.ts + INTERVAL 300 SECOND
        )
  )
  AND NOT (
        e.source = 'kernel-log' AND e.gpu IS NULL
        AND EXISTS (
            FROM gpu_events d
            WHERE d.kind = 'xid' AND d.source IS DISTINCT FROM 'kernel-log' AND d.gpu IS NOT NULL
              AND d.cluster = e.cluster AND d.node = e.node AND d.code = e.code
              AND d.ts >= e.ts - INTERVAL 60 SECOND AND d.ts <= e.ts + INTERVAL 300 SECOND
        )
  )
