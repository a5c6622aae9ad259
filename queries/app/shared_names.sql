-- Node names and job ids that more than one cluster holds (kind 'node' or 'job', name). The
-- dashboard and the report show these qualified by their cluster (`east/gpu001`), every other
-- name bare (pipelines/fleet_names.py).
SELECT 'node' AS kind, node AS name FROM nodes GROUP BY node HAVING count(DISTINCT cluster) > 1
UNION ALL
SELECT 'job' AS kind, job_id AS name FROM jobs GROUP BY job_id HAVING count(DISTINCT cluster) > 1
ORDER BY kind, name
