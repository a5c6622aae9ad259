-- GPU events (XIDs, ...) of the node ($cluster, $node) in [$week_start, $week_end), newest first.
SELECT ts, gpu, uuid, kind, code, message, source
FROM gpu_events
WHERE cluster = $cluster AND node = $node AND ts >= $week_start AND ts < $week_end
ORDER BY ts DESC
