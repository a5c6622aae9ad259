-- node_clusters_before_upgrade: the clusters `nodes` names, read while an older database is upgraded
-- (its other landing tables may not have `cluster` yet): the one cluster rows without one go to.
SELECT DISTINCT cluster FROM nodes ORDER BY cluster
