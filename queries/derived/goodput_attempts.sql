-- goodput_attempts: one row per job attempt, the spans every goodput table builds on.
-- Times are integer microseconds since the epoch (`_us`) so that sums of durations are exact.
--   start_us / end_us   the attempt's span [start, end). A missing end is the next attempt's start,
--                       else the job's end, else the data horizon (data_horizon.horizon_ts).
--                       Attempts never overlap: an attempt that would run past the next one's start
--                       (bad data) ends there.
--   cluster             the job's cluster (jobs.cluster: the cluster it was landed in).
--   gpus                GPUs the attempt held (jobs.num_gpus).
--   keeps_all           every step counts as kept: the final attempt of a succeeded job, or the
--                       still open (no end_ts) last attempt of a running job (provisional, as a live
--                       goodput reading). A running job whose last attempt ended waits for a requeue.
--   last_saved_step     newest checkpoint save of this attempt that finished before it ended.
--   last_save_end_us    when that save finished (the kept part of an attempt without step timings).
--   has_steps           the attempt logged rank steps (read from rank_step_summaries, built before).
--   job_first_start_us / job_end_us  the job's goodput wall: first attempt start .. job end
--                       (job end = jobs.end_ts, or the horizon while running, never before an attempt end).
-- A job without job_attempts rows but with a start_ts gets one implicit attempt 0. Rows of
-- job_attempts whose job is not in `jobs` are left out (their GPU count is unknown).
CREATE OR REPLACE TABLE goodput_attempts AS
WITH horizon AS (
    SELECT epoch_us(horizon_ts) AS horizon_us FROM data_horizon
),
raw AS (
    SELECT job_id, attempt, start_ts, end_ts, state, nodes FROM job_attempts
    UNION ALL
    SELECT j.job_id, 0, j.start_ts, j.end_ts, j.state, []::VARCHAR[]
    FROM jobs j
    WHERE j.start_ts IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM job_attempts a WHERE a.job_id = j.job_id)
),
spans AS (
    SELECT
        r.job_id,
        r.attempt,
        r.state,
        r.nodes,
        j.cluster,
        j.num_gpus AS gpus,
        j.state AS job_state,
        epoch_us(r.start_ts) AS start_us,
        epoch_us(coalesce(
            r.end_ts,
            lead(r.start_ts) OVER (PARTITION BY r.job_id ORDER BY r.attempt),
            j.end_ts
        )) AS given_end_us,
        r.attempt = max(r.attempt) OVER (PARTITION BY r.job_id) AS is_last,
        r.end_ts IS NULL AS is_open,
        epoch_us(j.end_ts) AS job_given_end_us,
        epoch_us(coalesce(j.submit_ts, j.start_ts, r.start_ts)) AS submit_us
    FROM raw r
    JOIN jobs j USING (job_id)
),
ended AS (
    -- Attempts never overlap: where they would (bad data), the earlier one ends when the later starts.
    SELECT
        s.*,
        greatest(s.start_us, least(
            coalesce(s.given_end_us, h.horizon_us),
            coalesce(lead(s.start_us) OVER (PARTITION BY s.job_id ORDER BY s.start_us, s.attempt),
                     coalesce(s.given_end_us, h.horizon_us))
        )) AS end_us,
        h.horizon_us
    FROM spans s, horizon h
),
logged AS (
    -- Attempts that logged rank steps: one summary row per step, not one row per rank.
    SELECT DISTINCT job_id, attempt
    FROM rank_step_summaries
    WHERE cluster = getvariable('pass_cluster')
),
saves AS (
    SELECT
        e.job_id,
        e.attempt,
        max(c.step) AS last_saved_step,
        max(epoch_us(c.start_ts) + CAST(round(c.duration_s * 1e6) AS BIGINT)) AS last_save_end_us
    FROM ended e
    JOIN checkpoints c ON c.job_id = e.job_id AND c.attempt = e.attempt AND c.kind = 'save'
    WHERE epoch_us(c.start_ts) + CAST(round(c.duration_s * 1e6) AS BIGINT) <= e.end_us
    GROUP BY ALL
)
SELECT
    e.job_id,
    e.attempt,
    e.state,
    e.nodes,
    e.cluster,
    e.gpus,
    e.start_us,
    e.end_us,
    e.is_last,
    e.job_state = 'running' AS is_running,
    e.is_last AND (e.job_state = 'succeeded' OR (e.job_state = 'running' AND e.is_open)) AS keeps_all,
    s.last_saved_step,
    s.last_save_end_us,
    l.job_id IS NOT NULL AS has_steps,
    min(e.start_us) OVER (PARTITION BY e.job_id) AS job_first_start_us,
    greatest(
        CASE WHEN e.job_state = 'running' THEN e.horizon_us
             ELSE coalesce(e.job_given_end_us, e.horizon_us) END,
        max(e.end_us) OVER (PARTITION BY e.job_id)
    ) AS job_end_us,
    least(e.submit_us, min(e.start_us) OVER (PARTITION BY e.job_id)) AS job_submit_us
FROM ended e
LEFT JOIN saves s USING (job_id, attempt)
LEFT JOIN logged l USING (job_id, attempt);
