-- report/node_cost: the $limit costliest nodes of $week_start's ISO week and $cluster ('*' = all)
-- (node_cost): GPU-hours jobs lost because of each (failures, straggler drag, down while jobs
-- waited) and the fleet goodput had it been replaced on Monday (ratios 0-1).
SELECT node, cluster, lost_gpu_h, failure_gpu_h, straggler_gpu_h, waiting_gpu_h, failures,
       straggler_ranks, fleet_goodput, fleet_goodput_without, goodput_regained
FROM node_cost
WHERE week = strftime($week_start::DATE, '%G-W%V')
  AND ($cluster = '*' OR cluster = $cluster)
ORDER BY lost_gpu_h DESC, node, cluster
LIMIT $limit
