-- A hardware finding stays open while its node is still unavailable for the same cause.
-- A detector closes a finding on its own evidence (an XID episode 6 h after its last event), but a
-- node that stays cordoned or with a bad condition after it is still down because of it. Here:
-- a node or GPU finding of class `hardware` (anomaly_kinds) whose node is `unavailable`
-- (node_state_intervals; adjacent unavailable intervals merged into one stretch, whatever their
-- reasons) at the instant the finding closes, in a stretch that began no earlier than
-- `$failure_before_s` before the finding started (the outage it caused, not an older one), now
-- ends with that stretch; it is open (end NULL) when the stretch reaches the data horizon `$horizon`.
-- The evidence records `held_open_by` (the stretch's first reason) and the detector's own end.
UPDATE anomalies
SET end_ts = CASE WHEN h.until_ts >= $horizon::TIMESTAMPTZ THEN NULL ELSE h.until_ts END,
    evidence = json_merge_patch(anomalies.evidence, json_object(
        'held_open_by', h.reason, 'detector_end', strftime(anomalies.end_ts, '%Y-%m-%dT%H:%M:%SZ')))::VARCHAR
FROM (
    WITH unavailable AS (
        SELECT node, start_ts, end_ts, reason,
               coalesce(start_ts > max(end_ts) OVER (PARTITION BY node ORDER BY start_ts
                                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS starts
        FROM node_state_intervals
        WHERE state = 'unavailable'
    ),
    grouped AS (
        SELECT *, sum(starts::INTEGER) OVER (PARTITION BY node ORDER BY start_ts ROWS UNBOUNDED PRECEDING) AS grp
        FROM unavailable
    ),
    stretches AS (
        SELECT node, min(start_ts) AS start_ts, max(end_ts) AS end_ts, arg_min(reason, start_ts) AS reason
        FROM grouped
        GROUP BY node, grp
    )
    SELECT a.anomaly_id, max(s.end_ts) AS until_ts, arg_max(s.reason, s.end_ts) AS reason
    FROM anomalies a
    JOIN anomaly_kinds k ON k.kind = a.kind AND k.class = 'hardware'
    JOIN stretches s
      ON s.node = a.node
     AND s.start_ts <= a.end_ts AND s.end_ts > a.end_ts
     AND s.start_ts >= a.start_ts - to_seconds($failure_before_s)
    WHERE a.end_ts IS NOT NULL AND a.entity_type IN ('node', 'gpu')
    GROUP BY a.anomaly_id
) h
WHERE anomalies.anomaly_id = h.anomaly_id
