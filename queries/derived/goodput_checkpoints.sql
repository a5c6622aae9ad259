-- goodput_checkpoints: blocking checkpoint time of each attempt as non-overlapping intervals.
-- Every `checkpoints` row (save or restore; all are blocking) is [start_ts, start_ts + duration_s)
-- clipped to its attempt's span; overlapping or touching ones merge. Times in epoch microseconds.
--   before_us  checkpoint time of the same attempt before this interval, so the checkpoint time
--              before any instant t is before_us + min(t - start_us, end_us - start_us) of the
--              last interval starting at or before t (how goodput_steps carves steps in one pass).
CREATE OR REPLACE TABLE goodput_checkpoints AS
WITH clipped AS (
    SELECT
        c.job_id,
        c.attempt,
        greatest(a.start_us, epoch_us(c.start_ts)) AS start_us,
        least(a.end_us, epoch_us(c.start_ts) + CAST(round(c.duration_s * 1e6) AS BIGINT)) AS end_us
    FROM checkpoints c
    JOIN goodput_attempts a USING (job_id, attempt)
),
flagged AS (
    SELECT *,
           max(end_us) OVER (PARTITION BY job_id, attempt ORDER BY start_us, end_us
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end_us
    FROM clipped
    WHERE end_us > start_us
),
merged AS (
    SELECT job_id, attempt, min(start_us) AS start_us, max(end_us) AS end_us
    FROM (
        SELECT *,
               sum(CASE WHEN start_us <= previous_end_us THEN 0 ELSE 1 END)
                   OVER (PARTITION BY job_id, attempt ORDER BY start_us, end_us) AS island
        FROM flagged
    )
    GROUP BY job_id, attempt, island
)
SELECT
    job_id,
    attempt,
    start_us,
    end_us,
    coalesce(sum(end_us - start_us) OVER (PARTITION BY job_id, attempt ORDER BY start_us
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::BIGINT AS before_us
FROM merged;
