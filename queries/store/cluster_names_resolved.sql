-- cluster_names_resolved: the clusters an input's names resolve to (the single known cluster for a
-- name no map knows); one means the whole input takes it as a constant.
SELECT list(DISTINCT coalesce(cluster, CAST($single AS VARCHAR))) FROM __names
