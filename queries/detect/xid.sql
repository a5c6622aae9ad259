-- Hardware XIDs: class `hardware` in the `xid_catalogue` table (built by the compute step of the
-- same name from queries/data/xid_catalogue.csv, or the file `failures.xid_catalogue` names).
-- Application-class XIDs (13, 31, 43, 45, ...) blame the workload, not the GPU: never an anomaly.
-- An XID both the kernel log and the exporter reported counts once (queries/metrics/xid_events.sql).
-- One episode per GPU (or node when the event names no GPU) and XID code: events less than
-- `$det_xid_clear_s` seconds apart are one episode; it stays open that long after its last event,
-- and is open (end NULL) when that reaches past the data horizon `$horizon`.
-- Severity and ladder action come from the catalogue. Score = number of events.
WITH catalogue AS (
    SELECT code, name, severity, action FROM xid_catalogue WHERE class = 'hardware'
),
events AS (
    SELECT e.ts, e.node, e.gpu, e.uuid, e.code, e.message, c.name, c.severity, c.action,
           lag(e.ts) OVER (PARTITION BY e.node, e.gpu, e.code ORDER BY e.ts) AS prev_ts
    FROM {{ metrics/xid_events }} e JOIN catalogue c USING (code)
),
episodes AS (
    SELECT *,
           sum(CASE WHEN prev_ts IS NULL OR ts - prev_ts >= to_seconds($det_xid_clear_s) THEN 1 ELSE 0 END)
               OVER (PARTITION BY node, gpu, code ORDER BY ts) AS episode
    FROM events
)
SELECT CASE WHEN gpu IS NULL THEN 'node' ELSE 'gpu' END AS entity_type,
       node, gpu, any_value(uuid) AS uuid, NULL::VARCHAR AS job_id, NULL::INTEGER AS rank,
       'xid' AS kind,
       min(ts) AS start_ts,
       CASE WHEN max(ts) + to_seconds($det_xid_clear_s) > $horizon::TIMESTAMPTZ THEN NULL
            ELSE max(ts) + to_seconds($det_xid_clear_s) END AS end_ts,
       min(ts) AS detected_at,
       count(*)::DOUBLE AS score,
       any_value(severity) AS severity,
       json_object('xid', code, 'name', any_value(name), 'events', count(*),
                   'message', arg_min(message, ts))::VARCHAR AS evidence,
       any_value(action) AS action
FROM episodes
GROUP BY node, gpu, code, episode
