-- Clusters of the fleet, for the cluster filter: those that list nodes and those whose jobs were
-- landed without an inventory (weekly_summary gives both a row).
SELECT cluster FROM nodes
UNION
SELECT cluster FROM jobs
ORDER BY cluster
