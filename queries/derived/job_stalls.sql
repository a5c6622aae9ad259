-- job_stalls: stretches in which an attempt with step logs ran but no step ended (a hang: a
-- collective that never completes, an NCCL deadlock), one row per stall. From goodput_steps
-- (a step's interval starts when the previous logged step ended) and goodput_checkpoints:
--   between two logged steps: the gap between their ends, net of blocking checkpoint time in it
--     (a long checkpoint save is not a stall);
--   after the last logged step of an attempt that did not succeed: until the attempt ended, or
--     until the data horizon while it runs (a succeeded attempt's tail is its teardown).
-- A gap is a stall when it lasts at least max(`$det_stall_min_s`, `$det_stall_step_multiple` x the
-- attempt's median logged step interval; logs of every N-th step have N-step intervals).
-- Columns: job_id, attempt, start_us / end_us and start_ts / end_ts (the stall: from the end of
-- the last step before it to the start of the next step, taken as its end minus the median
-- interval; to the attempt's end after the last step), stalled_s (the net gap, seconds),
-- threshold_s, median_step_s, last_step (the step before it), at_end (after the last step),
-- is_open (the attempt still runs at the horizon), failed (the attempt ended without success:
-- goodput_segments counts the stall's GPU time as `wasted`), gpus.
CREATE OR REPLACE TABLE job_stalls AS
WITH typical AS (
    SELECT job_id, attempt, min(step) AS first_step, max(end_us) AS last_end_us,
           arg_max(step, end_us) AS last_step,
           CAST(median(end_us - start_us) AS BIGINT) AS median_step_us
    FROM goodput_steps
    GROUP BY job_id, attempt
),
attempts AS (
    SELECT a.job_id, a.attempt, a.start_us, a.end_us, a.gpus, a.state,
           coalesce(ja.end_ts, j.end_ts) IS NULL AS is_open,
           t.first_step, t.last_end_us, t.last_step, t.median_step_us,
           greatest($det_stall_min_s * 1000000, $det_stall_step_multiple * t.median_step_us)::BIGINT AS threshold_us
    FROM goodput_attempts a
    JOIN typical t USING (job_id, attempt)
    JOIN jobs j USING (job_id)
    LEFT JOIN job_attempts ja USING (job_id, attempt)
),
gaps AS (
    SELECT s.job_id, s.attempt, s.start_us,
           s.end_us - a.median_step_us AS end_us,
           s.end_us - s.start_us - s.checkpoint_us AS net_us,
           s.previous_step AS last_step,
           false AS at_end
    FROM (SELECT *, lag(step) OVER (PARTITION BY job_id, attempt ORDER BY step) AS previous_step
          FROM goodput_steps) s
    JOIN attempts a USING (job_id, attempt)
    WHERE s.step > a.first_step AND s.end_us - s.start_us - s.checkpoint_us >= a.threshold_us
    UNION ALL
    SELECT a.job_id, a.attempt, a.last_end_us, a.end_us,
           a.end_us - a.last_end_us - coalesce((
               SELECT sum(least(c.end_us, a.end_us) - greatest(c.start_us, a.last_end_us))
               FROM goodput_checkpoints c
               WHERE c.job_id = a.job_id AND c.attempt = a.attempt
                 AND c.end_us > a.last_end_us AND c.start_us < a.end_us), 0),
           a.last_step, true
    FROM attempts a
    WHERE a.state IS DISTINCT FROM 'succeeded' AND a.end_us - a.last_end_us >= a.threshold_us
)
SELECT g.job_id, g.attempt,
       g.start_us, g.end_us,
       make_timestamp(g.start_us)::TIMESTAMPTZ AS start_ts,
       make_timestamp(g.end_us)::TIMESTAMPTZ AS end_ts,
       g.net_us / 1e6 AS stalled_s,
       a.threshold_us / 1e6 AS threshold_s,
       a.median_step_us / 1e6 AS median_step_s,
       g.last_step,
       g.at_end,
       g.at_end AND a.is_open AS is_open,
       NOT a.is_open AND a.state NOT IN ('succeeded', 'running') AS failed,
       a.gpus
FROM gaps g
JOIN attempts a USING (job_id, attempt)
WHERE g.net_us >= a.threshold_us AND g.end_us > g.start_us
ORDER BY g.job_id, g.attempt, g.start_us;
