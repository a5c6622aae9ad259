-- Escalation memory: a GPU that keeps failing is replaced, not reset again. The N-th
-- (`$det_escalate_xid_count`, default 3) critical hardware-XID finding on one GPU (node, gpu) whose
-- start falls within `$det_escalate_window_s` (default 30 days) of the earlier ones calls for
-- `replace`, whatever the catalogue's action for its code; earlier findings count even when long
-- closed. The evidence records why (`escalated`) and the findings behind it (`escalated_from`).
UPDATE anomalies
SET action = 'replace',
    evidence = json_merge_patch(anomalies.evidence, json_object(
        'escalated', 'critical hardware XID finding #' || e.n || ' on gpu ' || anomalies.gpu
                     || ' within ' || round($det_escalate_window_s / 86400.0, 1) || ' days',
        'escalated_from', e.ids))::VARCHAR
FROM (
    SELECT a.anomaly_id, count(*) AS n, list(b.anomaly_id ORDER BY b.start_ts) AS ids
    FROM anomalies a
    JOIN anomalies b
      ON b.kind = 'xid' AND b.severity = 'critical' AND b.node = a.node AND b.gpu = a.gpu
     AND b.start_ts <= a.start_ts AND b.start_ts > a.start_ts - to_seconds($det_escalate_window_s)
    WHERE a.kind = 'xid' AND a.severity = 'critical' AND a.gpu IS NOT NULL
    GROUP BY a.anomaly_id
) e
WHERE anomalies.anomaly_id = e.anomaly_id AND e.n >= $det_escalate_xid_count
