-- The node's GPUs ($cluster, $node) as an RMA ticket names them: index, UUID (dcgm-exporter's `UUID`
-- label), first and last sample with that UUID, from gpu_inventory. Only the UUIDs seen up to
-- $week_end; a GPU index with two UUIDs was swapped and shows both, oldest first.
SELECT gpu, uuid, first_ts, last_ts
FROM gpu_inventory
WHERE cluster = $cluster AND node = $node AND first_ts < $week_end
ORDER BY gpu, first_ts
