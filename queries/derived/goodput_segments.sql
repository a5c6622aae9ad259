-- goodput_segments: each job's goodput wall [first attempt start, job end) cut into
-- non-overlapping, gap-free segments, each with one category:
--   productive  kept steps, minus blocking checkpoints and program startup inside them
--   init        attempt start to its first step start, plus program startup of the first kept step
--               (its whole startup_us, net of the checkpoints inside the step, which stay checkpoint)
--   checkpoint  blocking checkpoint save or restore, wherever it falls inside an attempt
--   wasted      steps whose progress was lost (after the last checkpoint, or recomputed later), and
--               the stalls (job_stalls: no step ended for a long time, a hang) of attempts that then
--               failed, wherever they fall
--   recovery    from the end of an attempt to the start of the next, or to the data horizon for a
--               running job waiting for a requeue (GPUs released: gpus = 0)
--   other       the rest: stalls, the tail after the last step, the job's end after its last attempt
-- Each instant takes the first matching label: checkpoint > program startup > stall of an attempt
-- that failed (wasted) > step (kept: productive,
-- lost: wasted) > before the first step (init) / kept part of an attempt without step timings
-- (productive) > rest of the attempt (other; wasted for an attempt without step timings)
-- > recovery gap / tail after the last attempt. Attempts never overlap (see goodput_attempts).
-- Columns: job_id, attempt, start_ts, end_ts, category, gpus (GPUs held during the segment),
-- duration_s (DECIMAL seconds, exact to the microsecond), start_us / end_us (epoch microseconds).
-- Everything that reports goodput aggregates this table, so categories sum to the wall exactly.
CREATE OR REPLACE TABLE goodput_segments AS
WITH
-- startup_us is the first kept step's excess net of checkpoints, so its label must hold that much
-- non-checkpoint time: it runs from the step start over every checkpoint that begins before that much
-- other time has passed (those stay `checkpoint`, which wins), never past the step's end.
startup_checkpoints AS (
    SELECT job_id, attempt, step,
           CAST(coalesce(sum(checkpoint_us) FILTER (WHERE other_before_us < startup_us), 0) AS BIGINT) AS skipped_us
    FROM (
        SELECT s.job_id, s.attempt, s.step, s.startup_us,
               least(c.end_us, s.end_us) - greatest(c.start_us, s.start_us) AS checkpoint_us,
               -- time of the step before this checkpoint that is not checkpoint time
               greatest(c.start_us, s.start_us) - s.start_us
                 - coalesce(CAST(sum(least(c.end_us, s.end_us) - greatest(c.start_us, s.start_us)) OVER (
                       PARTITION BY s.job_id, s.attempt, s.step ORDER BY c.start_us
                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS BIGINT), 0) AS other_before_us
        FROM goodput_steps s
        JOIN goodput_checkpoints c
            ON c.job_id = s.job_id AND c.attempt = s.attempt AND c.start_us < s.end_us AND c.end_us > s.start_us
        WHERE s.startup_us > 0
    )
    GROUP BY job_id, attempt, step
),
labels AS (
    -- 1. blocking checkpoints (clipped to their attempt, merged)
    SELECT c.job_id, c.attempt, a.gpus, 1 AS priority, 'checkpoint' AS category, c.start_us, c.end_us
    FROM goodput_checkpoints c
    JOIN goodput_attempts a USING (job_id, attempt)
    UNION ALL
    -- 2. program startup at the beginning of the first kept step: startup_us of its
    --    non-checkpoint time (checkpoints inside that stretch stay checkpoint)
    SELECT s.job_id, s.attempt, a.gpus, 2, 'init', s.start_us,
           s.start_us + s.startup_us + coalesce(k.skipped_us, 0)
    FROM goodput_steps s
    JOIN goodput_attempts a USING (job_id, attempt)
    LEFT JOIN startup_checkpoints k USING (job_id, attempt, step)
    WHERE s.startup_us > 0
    UNION ALL
    -- 3. a stall (hang) of an attempt that then failed: its GPU time is wasted
    SELECT job_id, attempt, gpus, 3, 'wasted', start_us, end_us
    FROM job_stalls
    WHERE failed
    UNION ALL
    -- 4. steps
    SELECT s.job_id, s.attempt, a.gpus, 4, CASE WHEN s.kept THEN 'productive' ELSE 'wasted' END,
           s.start_us, s.end_us
    FROM goodput_steps s
    JOIN goodput_attempts a USING (job_id, attempt)
    UNION ALL
    -- 5a. initialisation: attempt start to its first step start
    SELECT s.job_id, s.attempt, a.gpus, 5, 'init', a.start_us, min(s.start_us)
    FROM goodput_steps s
    JOIN goodput_attempts a USING (job_id, attempt)
    GROUP BY s.job_id, s.attempt, a.gpus, a.start_us
    UNION ALL
    -- 5b. attempt without step timings: kept up to its last save, or all of it when it keeps all
    SELECT job_id, attempt, gpus, 5, 'productive', start_us,
           CASE WHEN keeps_all THEN end_us ELSE least(end_us, coalesce(last_save_end_us, start_us)) END
    FROM goodput_attempts
    WHERE NOT has_steps
    UNION ALL
    -- 6. the rest of the attempt
    SELECT job_id, attempt, gpus, 6, CASE WHEN has_steps THEN 'other' ELSE 'wasted' END, start_us, end_us
    FROM goodput_attempts
    UNION ALL
    -- 7a. recovery: end of an attempt to the next attempt's start (by start time)
    SELECT job_id, attempt, 0, 7, 'recovery', end_us, next_start_us
    FROM (
        SELECT job_id, attempt, end_us,
               lead(start_us) OVER (PARTITION BY job_id ORDER BY start_us, attempt) AS next_start_us
        FROM goodput_attempts
    )
    WHERE next_start_us > end_us
    UNION ALL
    -- 7b. the job's end after its last attempt ended (GPUs released); a running job is waiting
    --     for its next attempt: recovery
    SELECT job_id, arg_max(attempt, end_us), 0, 7,
           CASE WHEN bool_or(is_running) THEN 'recovery' ELSE 'other' END, max(end_us), any_value(job_end_us)
    FROM goodput_attempts
    GROUP BY job_id
    HAVING any_value(job_end_us) > max(end_us)
),
bounds AS (
    SELECT DISTINCT job_id, job_first_start_us AS first_us, job_end_us AS last_us FROM goodput_attempts
),
points AS (
    SELECT DISTINCT l.job_id, p.us
    FROM labels l
    JOIN bounds b USING (job_id),
    LATERAL (SELECT unnest([l.start_us, l.end_us]) AS us) p
    WHERE l.end_us > l.start_us AND p.us BETWEEN b.first_us AND b.last_us
    UNION
    SELECT job_id, first_us FROM bounds
    UNION
    SELECT job_id, last_us FROM bounds
),
elementary AS (
    SELECT job_id, us AS start_us, lead(us) OVER (PARTITION BY job_id ORDER BY us) AS end_us
    FROM points
),
-- Within one priority labels never overlap (attempts, steps and merged checkpoints don't), so the
-- label covering an elementary interval at that priority is the last one starting at or before it.
labelled AS (
    SELECT e.job_id, e.start_us, e.end_us, l.attempt, l.gpus, l.category
    FROM (
        SELECT e.job_id, e.start_us, e.end_us, p.priority
        FROM elementary e, range(1, 8) p(priority)
        WHERE e.end_us IS NOT NULL AND e.end_us > e.start_us
    ) e
    ASOF JOIN (SELECT * FROM labels WHERE end_us > start_us) l
        ON l.job_id = e.job_id AND l.priority = e.priority AND e.start_us >= l.start_us
    WHERE e.end_us <= l.end_us
    QUALIFY row_number() OVER (PARTITION BY e.job_id, e.start_us ORDER BY l.priority) = 1
),
islands AS (
    SELECT *,
           sum(CASE WHEN (attempt, gpus, category) IS NOT DISTINCT FROM (prev_attempt, prev_gpus, prev_category)
                    THEN 0 ELSE 1 END) OVER (PARTITION BY job_id ORDER BY start_us) AS island
    FROM (
        SELECT *,
               lag(attempt) OVER w AS prev_attempt,
               lag(gpus) OVER w AS prev_gpus,
               lag(category) OVER w AS prev_category
        FROM labelled
        WINDOW w AS (PARTITION BY job_id ORDER BY start_us)
    )
),
merged AS (
    SELECT job_id, any_value(attempt) AS attempt, any_value(category) AS category, any_value(gpus) AS gpus,
           min(start_us) AS start_us, max(end_us) AS end_us
    FROM islands
    GROUP BY job_id, island
)
SELECT
    job_id,
    attempt,
    make_timestamp(start_us)::TIMESTAMPTZ AS start_ts,
    make_timestamp(end_us)::TIMESTAMPTZ AS end_ts,
    category,
    gpus,
    CAST(CAST(end_us - start_us AS DECIMAL(18, 0)) * 0.000001 AS DECIMAL(18, 6)) AS duration_s,
    start_us,
    end_us
FROM merged
ORDER BY job_id, start_us;
