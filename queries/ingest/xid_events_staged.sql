-- xid_events_staged: the GPU events a Prometheus ingest staged, one row per event.
-- Two signals report XIDs: the per-code count series (`since` NULL: it saw the XID when it
-- happened) and the last-XID gauge (`since` = the gauge's previous sample: the XID happened in
-- (since, ts], and a GPU silent after its XID shows the new value only when it reports again).
-- A gauge change is the XID the count series already reported for the same GPU and code in
-- that span, staged now or stored by an earlier run, so it lands once, at the count's time.
WITH staged AS (
    FROM __gpu_events_staged
),
counted AS (
    SELECT cluster, node, gpu, code, ts
    FROM staged
    WHERE since IS NULL AND kind = 'xid'
)
SELECT g.* EXCLUDE (since)
FROM staged g
WHERE g.since IS NULL
   OR (
        NOT EXISTS (
            FROM counted c
            WHERE c.node = g.node
              AND c.gpu IS NOT DISTINCT FROM g.gpu
              AND c.code = g.code
              AND c.cluster IS NOT DISTINCT FROM g.cluster
              AND c.ts > g.since AND c.ts <= g.ts
        )
        AND NOT EXISTS (
            -- A staged event without a cluster takes the ingest's `--cluster` (or, with none,
            -- the cluster its node resolves to): compare with that cluster's stored events.
            FROM gpu_events e
            WHERE e.kind = 'xid' AND e.source = 'dcgm'
              AND e.node = g.node
              AND e.gpu IS NOT DISTINCT FROM g.gpu
              AND e.code = g.code
              AND (e.cluster = coalesce(g.cluster, $cluster) OR coalesce(g.cluster, $cluster) IS NULL)
              AND e.ts > g.since AND e.ts <= g.ts
        )
   )
-- The same event seen by both signals at one scrape lands once, as its first staged row.
QUALIFY row_number() OVER (PARTITION BY cluster, node, gpu, ts, kind, code ORDER BY __row) = 1
