-- node_remediation_history: what the remediation ladder recommended for each node, and since when,
-- so past weeks keep what was recommended then (node_remediation only says what holds now).
--
-- One row per maximal stretch [since, until) during which a node's highest recommended step stayed
-- the same: the highest ladder step (watch < cordon < drain < reset_gpu < reboot < replace) that the
-- node's findings open at that time call for (anomalies.action: the catalogue's or detector's step,
-- escalated by queries/detect/escalate.sql, a hardware finding held open while its node stayed
-- unavailable by queries/detect/persist.sql; a finding still open holds to the data horizon).
--   step        the ladder step
--   since       when the node first needed this step (UTC)
--   until       when it stopped (NULL: still in force at the data horizon)
--   severity    the worst severity among the findings behind it
--   why         the findings behind the step, '; '-separated: kind, XID code, GPU, severity, action
--               and, when escalated, why
--   anomaly_ids the findings behind the step (anomalies.anomaly_id)
-- Stretches with nothing open are not rows.
CREATE OR REPLACE TABLE node_remediation_history AS
WITH
ladder(action, step_no) AS (
    VALUES ('watch', 1), ('cordon', 2), ('drain', 3), ('reset_gpu', 4), ('reboot', 5), ('replace', 6)
),
horizon AS (
    SELECT horizon_ts FROM data_horizon
),
findings AS (
    SELECT a.node, a.anomaly_id, a.severity, l.step_no, a.start_ts,
           coalesce(a.end_ts, h.horizon_ts) AS end_ts,
           a.kind
               || CASE WHEN a.kind = 'xid' THEN coalesce(' ' || json_extract_string(a.evidence, '$.xid'), '') ELSE '' END
               || coalesce(' on gpu ' || a.gpu, '')
               || CASE WHEN a.entity_type = 'rank' THEN ' (job ' || a.job_id || ' rank ' || a.rank || ')' ELSE '' END
               || ' (' || a.severity || ') -> ' || a.action
               || coalesce(': ' || json_extract_string(a.evidence, '$.escalated'), '')
               AS why
    FROM anomalies a JOIN ladder l USING (action) CROSS JOIN horizon h
    WHERE a.node IS NOT NULL AND a.start_ts < coalesce(a.end_ts, h.horizon_ts)
),
boundaries AS (
    SELECT node, start_ts AS ts FROM findings
    UNION
    SELECT node, end_ts FROM findings
),
segments AS (
    SELECT node, ts AS start_ts, lead(ts) OVER (PARTITION BY node ORDER BY ts) AS end_ts
    FROM boundaries
    QUALIFY end_ts IS NOT NULL
),
segment_findings AS (
    SELECT s.node, s.start_ts, s.end_ts, f.anomaly_id, f.severity, f.why, f.step_no,
           max(f.step_no) OVER (PARTITION BY s.node, s.start_ts) AS top_step
    FROM segments s
    JOIN findings f ON f.node = s.node AND f.start_ts <= s.start_ts AND f.end_ts >= s.end_ts
),
segment_steps AS (
    -- only the findings that call for the segment's highest step are "behind" it
    SELECT node, start_ts, any_value(end_ts) AS end_ts, any_value(top_step) AS step_no,
           list(DISTINCT anomaly_id) AS ids, list(DISTINCT why) AS whys,
           max(CASE severity WHEN 'critical' THEN 3 WHEN 'warn' THEN 2 ELSE 1 END) AS severity_no
    FROM segment_findings
    WHERE step_no = top_step
    GROUP BY node, start_ts
),
merged AS (
    SELECT *, sum(starts::INTEGER) OVER (PARTITION BY node ORDER BY start_ts ROWS UNBOUNDED PRECEDING) AS grp
    FROM (
        SELECT *,
               coalesce(step_no IS DISTINCT FROM lag(step_no) OVER w OR start_ts > lag(end_ts) OVER w, true) AS starts
        FROM segment_steps
        WINDOW w AS (PARTITION BY node ORDER BY start_ts)
    )
)
SELECT m.node, n.cluster,
       (SELECT action FROM ladder l WHERE l.step_no = any_value(m.step_no)) AS step,
       min(m.start_ts) AS since,
       CASE WHEN max(m.end_ts) >= any_value(h.horizon_ts) THEN NULL ELSE max(m.end_ts) END AS until,
       CASE max(m.severity_no) WHEN 3 THEN 'critical' WHEN 2 THEN 'warn' ELSE 'info' END AS severity,
       array_to_string(list_sort(list_distinct(flatten(list(m.whys)))), '; ') AS why,
       list_sort(list_distinct(flatten(list(m.ids)))) AS anomaly_ids
FROM merged m
LEFT JOIN nodes n USING (node)
CROSS JOIN horizon h
GROUP BY m.node, n.cluster, m.grp
ORDER BY m.node, since
