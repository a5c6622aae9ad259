-- Failed attempts that ended in [$week_start, $week_end) for $cluster ('*' = all),
-- by failure class and cause, most frequent first: attempts (count) and the
-- GPU-hours they held (num_gpus x attempt length / 3600). cause = the XID (code and
-- name) when the hardware signal names one, else the node state it saw (unavailable /
-- unknown), else node_fail; without a hardware signal, the attempt's state and exit code.
-- cum_share = running share of all failed attempts (0-1), for the Pareto line.
-- lost_gpu_h = GPU-hours the failures cost (the Pareto's GPU-hour weighting): the attempt's
-- wasted progress (goodput_segments `wasted`, GPUs x length) plus the recovery gap after it (its
-- `recovery` segment x the job's GPUs, which waited for the requeue). lost_cum_share = running
-- share of all lost GPU-hours with causes ordered by lost_gpu_h (0-1). Same causes as the count.
WITH attempt_cluster AS (
    -- the cluster most of the attempt's nodes are in, as in the weekly summary
    SELECT a.job_id, a.attempt, c.cluster, a.exit_code
    FROM job_attempts a
    LEFT JOIN attempt_clusters c USING (job_id, attempt)
),
lost AS (
    SELECT s.job_id, s.attempt,
           sum(CASE s.category WHEN 'wasted' THEN s.gpus ELSE o.num_gpus END
               * epoch(s.end_ts - s.start_ts)) / 3600 AS lost_gpu_h
    FROM goodput_segments s
    JOIN attempt_outcomes o USING (job_id, attempt)
    WHERE s.category IN ('wasted', 'recovery') AND o.failure_class IS NOT NULL
      AND o.end_ts >= $week_start AND o.end_ts < $week_end
    GROUP BY s.job_id, s.attempt
),
failed AS (
    SELECT
        o.failure_class,
        coalesce(
            nullif(regexp_extract(o.hardware_signal, 'XID [0-9]+ \([A-Za-z0-9_]+\)'), ''),
            nullif(regexp_extract(o.hardware_signal, '^[^ ;]+ (unavailable|unknown)', 1), ''),
            CASE WHEN o.state = 'node_fail' THEN 'node_fail' END,
            nullif(o.hardware_signal, ''),
            o.state || coalesce(' (exit ' || CAST(ac.exit_code AS VARCHAR) || ')', '')
        ) AS cause,
        o.num_gpus * epoch(o.end_ts - o.start_ts) / 3600 AS gpu_h,
        coalesce(l.lost_gpu_h, 0) AS lost_gpu_h
    FROM attempt_outcomes o
    LEFT JOIN attempt_cluster ac USING (job_id, attempt)
    LEFT JOIN lost l USING (job_id, attempt)
    WHERE o.failure_class IS NOT NULL
      AND o.end_ts >= $week_start AND o.end_ts < $week_end
      AND ($cluster = '*' OR ac.cluster = $cluster)
),
grouped AS (
    SELECT failure_class, cause, count(*) AS attempts, sum(gpu_h) AS gpu_h,
           CAST(sum(lost_gpu_h) AS DOUBLE) AS lost_gpu_h
    FROM failed
    GROUP BY failure_class, cause
)
SELECT
    failure_class,
    cause,
    attempts,
    gpu_h,
    sum(attempts) OVER (ORDER BY attempts DESC, gpu_h DESC, failure_class, cause)
        / sum(attempts) OVER () AS cum_share,
    lost_gpu_h,
    sum(lost_gpu_h) OVER (ORDER BY lost_gpu_h DESC, attempts DESC, failure_class, cause)
        / nullif(sum(lost_gpu_h) OVER (), 0) AS lost_cum_share
FROM grouped
ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
