-- goodput_steps: one row per executed training step of an attempt, placed on the timeline.
-- Ranks of a synchronous job finish a step together, so a step is one interval for all ranks:
--   end_us    the last rank's end_ts of that step;
--   start_us  the previous step's end_us in the same attempt; for the attempt's first logged step,
--             end_us - its longest step_s. Both are clipped to the attempt's span; a step that
--             ends before an earlier one (logged out of order) is empty (start_us = end_us).
--   kept      the step's progress survived: it belongs to an attempt that keeps all its steps
--             (final attempt of a succeeded job, or the running attempt), or it is at or before the
--             attempt's last checkpoint save; and no later attempt executed the same step again
--             (a recomputed step counts once, in its kept execution).
--   checkpoint_us  blocking checkpoint time (save or restore) inside the step interval.
--   startup_us     program startup (compilation, warm-up), on the attempt's first kept step only:
--             its duration without checkpoints minus the mean of the attempt's other kept steps
--             (never negative; zero when the attempt kept a single step). ml-goodput-measurement's rule.
--   drag_s    straggler drag of the step: slowest rank minus median rank, on compute_s when every
--             rank logged it, else step_s. Seconds, rounded to the microsecond.
--   slowest_rank   the rank that set the step's slowest time (lowest rank number on ties).
-- The per-rank inputs of a step come from rank_step_summaries (one row per step, summarised from
-- rank_steps once per loaded job), so a compute reads no rank rows here.
CREATE OR REPLACE TABLE goodput_steps AS
WITH per_step AS (
    -- The steps' rank summaries, kept between computes (queries/derived/rank_step_summaries.sql).
    SELECT * EXCLUDE (cluster)
    FROM rank_step_summaries
    WHERE cluster = getvariable('pass_cluster')
),
placed AS (
    SELECT
        p.*,
        a.start_us AS attempt_start_us,
        a.end_us AS attempt_end_us,
        a.keeps_all,
        a.last_saved_step,
        -- the latest end of an earlier step: steps never overlap, even if logged out of order
        coalesce(
            max(p.end_us) OVER (PARTITION BY p.job_id, p.attempt ORDER BY p.step
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
            p.end_us - p.longest_step_us
        ) AS raw_start_us
    FROM per_step p
    JOIN goodput_attempts a USING (job_id, attempt)
),
clipped AS (
    SELECT
        job_id,
        attempt,
        step,
        ranks,
        least(greatest(raw_start_us, attempt_start_us), attempt_end_us) AS start_us,
        least(greatest(end_us, attempt_start_us), attempt_end_us) AS end_us,
        (keeps_all OR step <= coalesce(last_saved_step, -1))
            AND attempt = max(attempt) OVER (PARTITION BY job_id, step) AS kept,
        CAST(round(CASE WHEN uses_compute THEN max_compute_s - median_compute_s
                        ELSE max_step_s - median_step_s END, 6) AS DECIMAL(18, 6)) AS drag_s,
        CASE WHEN uses_compute THEN slowest_compute_rank ELSE slowest_step_rank END AS slowest_rank
    FROM placed
),
with_checkpoints AS (
    -- checkpoint time inside [start, end) = C(end) - C(start), C(t) = checkpoint time before t
    SELECT
        s.* EXCLUDE (start_us, end_us),
        s.start_us,
        greatest(s.start_us, s.end_us) AS end_us,
        (coalesce(ce.before_us + least(greatest(s.start_us, s.end_us) - ce.start_us, ce.end_us - ce.start_us), 0)
         - coalesce(cs.before_us + least(s.start_us - cs.start_us, cs.end_us - cs.start_us), 0))::BIGINT AS checkpoint_us
    FROM clipped s
    ASOF LEFT JOIN goodput_checkpoints ce
        ON ce.job_id = s.job_id AND ce.attempt = s.attempt AND greatest(s.start_us, s.end_us) >= ce.start_us
    ASOF LEFT JOIN goodput_checkpoints cs
        ON cs.job_id = s.job_id AND cs.attempt = s.attempt AND s.start_us >= cs.start_us
),
kept_stats AS (
    SELECT
        job_id,
        attempt,
        min(step) FILTER (WHERE kept) AS first_kept_step,
        count(*) FILTER (WHERE kept) AS kept_steps,
        sum(end_us - start_us - checkpoint_us) FILTER (WHERE kept) AS kept_net_us
    FROM with_checkpoints
    GROUP BY job_id, attempt
)
SELECT
    s.job_id,
    s.attempt,
    s.step,
    s.ranks,
    s.start_us,
    s.end_us,
    s.kept,
    s.checkpoint_us,
    CASE
        WHEN s.kept AND s.step = k.first_kept_step AND k.kept_steps > 1 THEN greatest(0,
            (s.end_us - s.start_us - s.checkpoint_us)
            - CAST(round((k.kept_net_us - (s.end_us - s.start_us - s.checkpoint_us)) / (k.kept_steps - 1)) AS BIGINT))
        ELSE 0
    END::BIGINT AS startup_us,
    s.drag_s,
    s.slowest_rank
FROM with_checkpoints s
JOIN kept_stats k USING (job_id, attempt);
