-- checkpoint_advice: is each recurring job checkpointing at the right interval for the failure
-- rate it sees at its size? (docs/metrics.md "Checkpoint advice").
--
-- One row per job key and ISO week (of the save's start) with at least two saves in one attempt.
-- job_key = team || '/' || name (a job without a name keys on its job_id): runs of the same job
-- by the same team are one recurring job.
--   save_cost_s C          median duration of its blocking saves (checkpoints kind 'save'), s
--   current_interval_s     median work time between two saves of one attempt (a save's start minus
--                          the previous save's end), s
--   fleet_interruptions    failures of the fleet that ended in the week (failure_escapes rows)
--   fleet_node_h           node-hours job attempts held in the week (len(nodes) x time in the week)
--   interruptions_per_node_h  fleet_interruptions / fleet_node_h: the per-node interruption rate
--   nodes                  median node count of the key's attempts that saved
--   interruption_rate_per_h  lambda = interruptions_per_node_h x nodes (per hour, the job's size);
--                          mtbi_h = 1 / lambda (NULL when the fleet had no interruption)
--   young_interval_s       sqrt(2 C M), M = 1/lambda in seconds (Young's first-order optimum)
--   optimal_interval_s     Daly's higher-order optimum: sqrt(2CM) (1 + sqrt(C/2M)/3 + (C/2M)/9) - C
--                          when C < 2M, else M
--   lost_fraction_current / lost_fraction_optimal  expected share of wall time lost (saves plus
--                          rework) in Daly's exponential model with restart cost 0:
--                          1 - tau / (M (exp((tau + C)/M) - 1)) at tau = current / optimal interval
--   allocated_gpu_h        GPU-hours the key's attempts held in the week (goodput_segments, gpus > 0)
--   regained_gpu_h         (lost_fraction_current - lost_fraction_optimal) x allocated_gpu_h
CREATE OR REPLACE TABLE checkpoint_advice AS
WITH
keyed_jobs AS (
    SELECT job_id, name, team, num_gpus,
        coalesce(team, '') || '/' || coalesce(name, job_id) AS job_key
    FROM jobs
),
saves AS (
    SELECT c.job_id, c.attempt, c.start_ts, c.duration_s,
        epoch(c.start_ts) - lag(epoch(c.start_ts) + c.duration_s)
            OVER (PARTITION BY c.job_id, c.attempt ORDER BY c.start_ts) AS interval_s
    FROM checkpoints c
    WHERE c.kind = 'save'
),
per_key AS (
    SELECT strftime(s.start_ts, '%G-W%V') AS week, k.job_key,
        any_value(k.name) AS name, any_value(k.team) AS team,
        count(DISTINCT s.job_id) AS jobs,
        max(k.num_gpus) AS gpus,
        count(*) AS saves,
        median(s.duration_s) AS save_cost_s,
        median(s.interval_s) AS current_interval_s
    FROM saves s
    JOIN keyed_jobs k USING (job_id)
    GROUP BY ALL
    HAVING count(s.interval_s) > 0
),
key_nodes AS (
    SELECT k.job_key, median(len(a.nodes)) AS nodes
    FROM job_attempts a
    JOIN keyed_jobs k USING (job_id)
    WHERE EXISTS (SELECT 1 FROM saves s WHERE s.job_id = a.job_id AND s.attempt = a.attempt)
    GROUP BY k.job_key
),
weeks AS (
    SELECT DISTINCT week, CAST(strptime(week || '-1', '%G-W%V-%u') AS TIMESTAMPTZ) AS week_start
    FROM per_key
),
exposure AS (
    SELECT w.week,
        coalesce(sum(len(a.nodes) * greatest(0.0,
            epoch(least(a.start_ts + to_seconds(a.duration_s), w.week_start + INTERVAL 7 DAY))
            - epoch(greatest(a.start_ts, w.week_start)))), 0) / 3600.0 AS fleet_node_h
    FROM weeks w
    LEFT JOIN attempt_outcomes a
        ON a.start_ts < w.week_start + INTERVAL 7 DAY
        AND a.start_ts + to_seconds(a.duration_s) > w.week_start
    GROUP BY w.week
),
interruptions AS (
    SELECT week, count(*) AS fleet_interruptions FROM failure_escapes GROUP BY week
),
held AS (
    SELECT w.week, k.job_key,
        sum(g.gpus * greatest(0.0,
            epoch(least(g.end_ts, w.week_start + INTERVAL 7 DAY))
            - epoch(greatest(g.start_ts, w.week_start)))) / 3600.0 AS allocated_gpu_h
    FROM goodput_segments g
    JOIN keyed_jobs k USING (job_id)
    JOIN weeks w
        ON g.start_ts < w.week_start + INTERVAL 7 DAY AND g.end_ts > w.week_start
    WHERE g.gpus > 0
    GROUP BY ALL
),
rates AS (
    SELECT p.*, n.nodes,
        coalesce(i.fleet_interruptions, 0) AS fleet_interruptions,
        e.fleet_node_h,
        coalesce(i.fleet_interruptions, 0) / nullif(e.fleet_node_h, 0) AS interruptions_per_node_h,
        coalesce(h.allocated_gpu_h, 0) AS allocated_gpu_h
    FROM per_key p
    LEFT JOIN key_nodes n USING (job_key)
    LEFT JOIN exposure e USING (week)
    LEFT JOIN interruptions i USING (week)
    LEFT JOIN held h USING (week, job_key)
),
model AS (
    SELECT *,
        interruptions_per_node_h * nodes AS interruption_rate_per_h,
        -- M: mean time between interruptions of a job this size, seconds (NULL: none seen)
        3600.0 / nullif(interruptions_per_node_h * nodes, 0) AS m_s
    FROM rates
),
optimum AS (
    SELECT *,
        sqrt(2 * save_cost_s * m_s) AS young_interval_s,
        CASE WHEN save_cost_s < 2 * m_s
             THEN sqrt(2 * save_cost_s * m_s)
                  * (1 + sqrt(save_cost_s / (2 * m_s)) / 3 + (save_cost_s / (2 * m_s)) / 9) - save_cost_s
             ELSE m_s END AS optimal_interval_s
    FROM model
),
lost AS (
    SELECT *,
        1 - current_interval_s / (m_s * (exp(least((current_interval_s + save_cost_s) / m_s, 700)) - 1))
            AS lost_fraction_current,
        1 - optimal_interval_s / (m_s * (exp(least((optimal_interval_s + save_cost_s) / m_s, 700)) - 1))
            AS lost_fraction_optimal
    FROM optimum
)
SELECT week, job_key, name, team, jobs, gpus, nodes, saves, save_cost_s, current_interval_s,
    fleet_interruptions, fleet_node_h, interruptions_per_node_h, interruption_rate_per_h,
    m_s / 3600.0 AS mtbi_h, young_interval_s, optimal_interval_s,
    lost_fraction_current, lost_fraction_optimal, allocated_gpu_h,
    (lost_fraction_current - lost_fraction_optimal) * allocated_gpu_h AS regained_gpu_h,
    CAST(strptime(week || '-1', '%G-W%V-%u') AS DATE) AS week_start
FROM lost
ORDER BY week, regained_gpu_h DESC NULLS LAST, job_key
