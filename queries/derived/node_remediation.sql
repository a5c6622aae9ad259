-- Remediation summary per node: the highest step of the ladder
-- (watch < cordon < drain < reset_gpu < reboot < replace) that its open anomalies call for
-- (open = end_ts NULL, i.e. still holding at the data horizon; actions already escalated and hardware
-- findings held open while their node stays unavailable, queries/detect/escalate.sql and persist.sql;
-- what was recommended earlier is in node_remediation_history), and a policy check per cluster:
-- never take more than `$det_max_out_share` of a cluster's nodes out of service at once.
-- Steps from `cordon` up take the node out (no new work); they are granted in priority order
-- (higher step first, then critical before warn, then the larger score) up to
-- floor(share x cluster nodes); the rest `wait`. `watch` needs no capacity; `none` = nothing open.
-- cluster_out_share_requested / cluster_out_share_granted: share of the cluster's nodes that would
-- be out at once if every request were granted / under the policy (ratios 0-1).
CREATE OR REPLACE TABLE node_remediation AS
WITH ladder(action, step_no) AS (
    VALUES ('watch', 1), ('cordon', 2), ('drain', 3), ('reset_gpu', 4), ('reboot', 5), ('replace', 6)
),
open_findings AS (
    SELECT a.node, a.kind, a.severity, a.score, l.step_no
    FROM anomalies a JOIN ladder l USING (action)
    WHERE a.end_ts IS NULL
),
per_node AS (
    SELECT n.node, n.cluster,
           coalesce(max(o.step_no), 0) AS step_no,
           count(o.kind) AS open_anomalies,
           list_sort(list(DISTINCT o.kind) FILTER (WHERE o.kind IS NOT NULL)) AS kinds,
           bool_or(o.severity = 'critical') AS has_critical,
           max(o.score) AS max_score,
           count(*) OVER (PARTITION BY n.cluster) AS cluster_nodes
    FROM nodes n LEFT JOIN open_findings o USING (node)
    GROUP BY n.node, n.cluster
),
prioritised AS (
    SELECT *,
           CASE WHEN step_no >= 2 THEN row_number() OVER (
               PARTITION BY cluster, step_no >= 2
               ORDER BY step_no DESC, coalesce(has_critical, false) DESC, max_score DESC NULLS LAST, node)
           END AS priority,
           floor($det_max_out_share * cluster_nodes)::INTEGER AS out_budget,
           count(*) FILTER (WHERE step_no >= 2) OVER (PARTITION BY cluster) AS out_requested
    FROM per_node
)
SELECT node, cluster,
       coalesce((SELECT action FROM ladder l WHERE l.step_no = p.step_no), 'none') AS ladder_step,
       open_anomalies, kinds,
       CASE WHEN has_critical THEN 'critical' WHEN open_anomalies > 0 THEN 'warn' END AS severity,
       priority,
       CASE WHEN step_no = 0 THEN 'none'
            WHEN step_no = 1 THEN 'watch'
            WHEN priority <= out_budget THEN 'act'
            ELSE 'wait' END AS decision,
       cluster_nodes, out_budget,
       out_requested / cluster_nodes AS cluster_out_share_requested,
       least(out_requested, out_budget) / cluster_nodes AS cluster_out_share_granted
FROM prioritised p
ORDER BY cluster, priority NULLS LAST, node
