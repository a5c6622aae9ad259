-- goodput_steps: one row per executed training step of an attempt, placed on the timeline.
-- Ranks of a synchronous job finish a step together, so a step is one interval for all ranks:
--   end_us    the last rank's end_ts of that step;
--   start_us  the previous step's end_us in the same attempt; for the attempt's first logged step,
--             end_us - its longest step_s. Both are clipped to the attempt's span.
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
CREATE OR REPLACE TABLE goodput_steps AS
WITH per_step AS (
    SELECT
        job_id,
        attempt,
        step,
        max(epoch_us(end_ts)) AS end_us,
        CAST(round(max(step_s) * 1e6) AS BIGINT) AS longest_step_us,
        count(*) AS ranks,
        count(compute_s) = count(*) AS uses_compute,
        max(CASE WHEN compute_s IS NOT NULL THEN compute_s END) AS max_compute_s,
        median(compute_s) AS median_compute_s,
        max(step_s) AS max_step_s,
        median(step_s) AS median_step_s,
        arg_min(rank, struct_pack(t := -compute_s, r := rank)) AS slowest_compute_rank,
        arg_min(rank, struct_pack(t := -step_s, r := rank)) AS slowest_step_rank
    FROM rank_steps
    GROUP BY job_id, attempt, step
),
placed AS (
    SELECT
        p.*,
        a.start_us AS attempt_start_us,
        a.end_us AS attempt_end_us,
        a.keeps_all,
        a.last_saved_step,
        coalesce(
            lag(p.end_us) OVER (PARTITION BY p.job_id, p.attempt ORDER BY p.step),
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
    SELECT
        s.*,
        coalesce((
            SELECT sum(greatest(0, least(s.end_us, epoch_us(c.start_ts) + CAST(round(c.duration_s * 1e6) AS BIGINT))
                                   - greatest(s.start_us, epoch_us(c.start_ts))))
            FROM checkpoints c
            WHERE c.job_id = s.job_id AND c.attempt = s.attempt
        ), 0)::BIGINT AS checkpoint_us
    FROM clipped s
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
