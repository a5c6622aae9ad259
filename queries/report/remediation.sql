-- report/remediation: what the remediation ladder recommended during the week
-- (node_remediation_history rows overlapping it), for nodes of $cluster ('*' = all): highest step
-- first. until NULL = still in force at the data horizon; a step that ended inside the week is listed
-- too, so a past week shows what was recommended then, not what is open now.
-- Params: $week_start (DATE, a Monday), $cluster.
WITH week AS (
    SELECT $week_start::TIMESTAMPTZ AS start_ts, $week_start::TIMESTAMPTZ + INTERVAL 7 DAY AS end_ts
),
ladder(step, step_no) AS (
    VALUES ('watch', 1), ('cordon', 2), ('drain', 3), ('reset_gpu', 4), ('reboot', 5), ('replace', 6)
)
SELECT h.node, h.cluster, h.step, h.since, h.until, h.severity, h.why
FROM node_remediation_history h
JOIN ladder l USING (step), week w
WHERE h.since < w.end_ts AND (h.until IS NULL OR h.until > w.start_ts)
  AND ($cluster = '*' OR h.cluster = $cluster)
ORDER BY l.step_no DESC, h.since, h.node
