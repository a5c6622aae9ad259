-- cluster_node_map: per node name, the cluster it maps to when it maps to one (`n` = 1), else the
-- clusters it is in; from __node_pairs, the node -> cluster pairs the batch states plus the stored ones.
CREATE OR REPLACE TEMP TABLE __node_cluster AS
SELECT node, min(cluster) AS cluster, count(*) AS n, list_sort(list(cluster)) AS clusters
FROM __node_pairs
GROUP BY node
