-- The node's inventory row ($node): cluster, instance type, GPU model and count,
-- network links expected.
SELECT node, cluster, instance_type, gpu_model, gpu_count, nic_expected
FROM nodes
WHERE node = $node
