-- cluster_name_problem: the first name of an input (in __names) that maps to several clusters, or
-- to none while the database and batch know no single cluster ($single NULL).
SELECT name, clusters
FROM __names
WHERE n > 1 OR (n IS NULL AND CAST($single AS VARCHAR) IS NULL)
ORDER BY name
LIMIT 1
