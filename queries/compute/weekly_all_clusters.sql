-- weekly_all_clusters: weekly_summary's per-cluster rows (set aside as __weekly_per_cluster) and its
-- all-clusters rows ('*', just built over cluster-qualified names) as one table.
CREATE TABLE __weekly_all AS
SELECT * FROM __weekly_per_cluster
UNION ALL BY NAME
SELECT * FROM weekly_summary WHERE cluster = '*'
ORDER BY week, cluster = '*', cluster
