-- The node's inventory row ($cluster, $node): cluster, instance type, GPU model and count,
-- network links expected.
SELECT node, cluster, instance_type, gpu_model, gpu_count, nic_expected
FROM nodes
WHERE cluster = $cluster AND node = $node
