-- The job's goodput timeline ($cluster, $job): non-overlapping segments covering
-- [first attempt start, job end), each productive / init / checkpoint / wasted /
-- recovery / other; gpus held during it (0 in a recovery gap).
SELECT
    coalesce('attempt ' || CAST(attempt AS VARCHAR), 'between attempts') AS lane,
    attempt,
    start_ts,
    end_ts,
    category,
    gpus,
    epoch(end_ts - start_ts) AS duration_s
FROM goodput_segments
WHERE cluster = $cluster AND job_id = $job
ORDER BY start_ts
