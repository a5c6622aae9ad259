-- clusters: the clusters the landing tables name, in order; one pass of the derived steps runs per
-- cluster (none: the caller runs one pass as `default`).
SELECT cluster FROM nodes
UNION
SELECT cluster FROM jobs
ORDER BY 1
