-- GPU events (XIDs, ...) of the node ($node) in [$week_start, $week_end), newest first.
SELECT ts, gpu, uuid, kind, code, message, source
FROM gpu_events
WHERE node = $node AND ts >= $week_start AND ts < $week_end
ORDER BY ts DESC
