-- Clusters of the fleet: those that list nodes and those whose jobs were landed without an
-- inventory (weekly_summary gives both a row). The dashboard's cluster filter lists them, and
-- `gpufleet compute` runs one pass of its derived steps per cluster (none: one pass as `default`).
SELECT cluster FROM nodes
UNION
SELECT cluster FROM jobs
ORDER BY cluster
