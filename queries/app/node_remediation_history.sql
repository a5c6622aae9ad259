-- The remediation steps recommended for ($cluster, $node) up to $week_end (node_remediation_history), newest
-- first: step, since, until (NULL = still in force at the data horizon), severity, why, anomaly_ids.
SELECT step, since, until, severity, why, anomaly_ids
FROM node_remediation_history
WHERE cluster = $cluster AND node = $node AND since < $week_end
ORDER BY since DESC
