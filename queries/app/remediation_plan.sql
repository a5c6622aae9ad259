-- The remediation plan for the week [$week_start, $week_end), nodes of $cluster ('*' = all): one row
-- per node with a step of the ladder recommended during the week (node_remediation_history rows that
-- overlap it). Read by the dashboard's Remediation page and by `gpufleet remediation` (JSON, CSV).
-- gpufleet never acts on a cluster: `command` is what an operator would run.
--   step, since, until   the node's latest step in the week: the history row overlapping the week that
--                        started last (until NULL: still in force at the data horizon)
--   severity, why, anomaly_ids  the worst severity and the findings behind that step (ids ','-joined)
--   status       as of the data horizon: `granted` (in force and within the cluster's disruption
--                budget, node_remediation.decision `act`), `waiting` (over the budget: `wait`),
--                `watch` (needs no capacity, nothing to run), `ended` (no longer recommended)
--   priority, out_budget, cluster_nodes  node_remediation's place in the queue and the budget
--                (floor(max_out_share x cluster nodes)) for steps still in force
--   cost_gpu_h   node_cost.lost_gpu_h of the week (GPU-hours jobs lost because of the node), 0 without
--   scheduler    `kubernetes`, `slurm` or `unknown`: the cluster's, as the data shows it
--                (cluster_schedulers, queries/derived/cluster_schedulers.sql)
--   command      for a step from cordon up still in force on a known scheduler (else NULL):
--                kubernetes cordon: `kubectl cordon NODE`; drain and above (reset_gpu, reboot, replace
--                are done on a node without work): `kubectl drain NODE --ignore-daemonsets
--                --delete-emptydir-data`; slurm, every step from cordon up: `scontrol update
--                NodeName=NODE State=DRAIN Reason="gpufleet STEP: KINDS"` (DRAIN lets running jobs end,
--                takes no new ones). A node name other than [A-Za-z0-9._-] is single-quoted for the shell.
--   history      every step recommended for the node up to the week's end, oldest first:
--                `step since–until` (UTC, `…` = still in force), '; '-separated
-- Sorted by severity (critical, warn, info), then cost_gpu_h (highest first), then node.
WITH
ladder(step, step_no) AS (
    VALUES ('watch', 1), ('cordon', 2), ('drain', 3), ('reset_gpu', 4), ('reboot', 5), ('replace', 6)
),
in_week AS (
    SELECT h.*,
           row_number() OVER (PARTITION BY h.cluster, h.node ORDER BY h.since DESC) AS newest
    FROM node_remediation_history h
    WHERE h.since < $week_end AND (h.until IS NULL OR h.until > $week_start)
      AND ($cluster = '*' OR h.cluster = $cluster)
),
history AS (
    SELECT cluster, node,
           string_agg(step || ' ' || strftime(since, '%Y-%m-%d %H:%M') || '–'
                      || coalesce(strftime(until, '%Y-%m-%d %H:%M'), '…'), '; ' ORDER BY since) AS history
    FROM node_remediation_history h
    WHERE since < $week_end AND EXISTS (SELECT 1 FROM in_week w WHERE w.cluster = h.cluster AND w.node = h.node)
    GROUP BY cluster, node
),
plan AS (
    SELECT w.node, w.cluster, w.step, l.step_no, w.since, w.until,
           w.severity, w.why, array_to_string(w.anomaly_ids, ',') AS anomaly_ids,
           CASE WHEN w.until IS NOT NULL THEN 'ended'
                WHEN r.decision = 'act' THEN 'granted'
                WHEN r.decision = 'wait' THEN 'waiting'
                WHEN r.decision = 'watch' THEN 'watch'
                ELSE 'ended' END AS status,
           CASE WHEN w.until IS NULL THEN r.priority END AS priority,
           r.out_budget, r.cluster_nodes,
           coalesce(c.lost_gpu_h, 0) AS cost_gpu_h,
           coalesce(s.scheduler, 'unknown') AS scheduler,
           CASE WHEN regexp_full_match(w.node, '[A-Za-z0-9._-]+') THEN w.node
                ELSE '''' || replace(w.node, '''', '''"''"''') || '''' END AS shell_node,
           h.history
    FROM in_week w
    JOIN ladder l USING (step)
    LEFT JOIN node_remediation r USING (cluster, node)
    LEFT JOIN node_cost c ON c.cluster = w.cluster AND c.node = w.node AND c.week = $week
    LEFT JOIN cluster_schedulers s ON s.cluster = w.cluster
    LEFT JOIN history h USING (cluster, node)
    WHERE w.newest = 1
)
SELECT node, cluster, step, severity, status, since, until, why, anomaly_ids, cost_gpu_h, priority,
       out_budget, cluster_nodes, scheduler,
       CASE WHEN status IN ('granted', 'waiting') AND step_no >= 2 THEN
           CASE scheduler
               WHEN 'kubernetes' THEN
                   CASE WHEN step = 'cordon' THEN 'kubectl cordon ' || shell_node
                        ELSE 'kubectl drain ' || shell_node || ' --ignore-daemonsets --delete-emptydir-data' END
               WHEN 'slurm' THEN
                   'scontrol update NodeName=' || shell_node || ' State=DRAIN Reason="gpufleet ' || step || ': '
                   || regexp_replace(
                          array_to_string(list_sort(list_distinct(
                              list_transform(string_split(why, '; '), lambda x: split_part(x, ' ', 1)))), ','),
                          '[^A-Za-z0-9_.,:-]', '', 'g')
                   || '"'
           END
       END AS command,
       history
FROM plan
ORDER BY CASE severity WHEN 'critical' THEN 1 WHEN 'warn' THEN 2 ELSE 3 END, cost_gpu_h DESC, node, cluster
