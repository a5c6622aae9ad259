-- The impact of every finding, once job outcomes are known (attempt_outcomes, goodput_segments):
--   impact_gpu_h       GPU-hours of job attempts that ran on the entity while the finding was open:
--                      sum over attempts of num_gpus x overlap of [attempt start, end) with
--                      [start, end), in hours, open ends at the data horizon `$horizon`. Node and GPU
--                      findings count every attempt whose node list holds the node (a synchronous job
--                      slows with its sickest GPU; for a GPU an upper bound when small jobs share the
--                      node); rank and job findings count their own job only.
--   goodput_lost_gpu_h the goodput lost by the attempts the finding ended, in GPU-hours: node and GPU
--                      findings: attempts that are fleet failures of class hardware implicating the
--                      finding's node (attempt_outcomes.implicated_nodes) and that ended from
--                      `$failure_before_s` before its start to `$failure_after_s` after its end (the
--                      job-failure window); per attempt its wasted progress (goodput_segments
--                      `wasted`, x the GPUs held) plus the recovery gap after it (`recovery`, x the
--                      job's GPUs: they were idle waiting for the restart). A finding that kills a job
--                      the instant it appears has impact_gpu_h 0 and the job's loss here. Rank
--                      (straggler) and job (stalled) findings keep their own (drag x GPUs; wasted). Two findings behind one
--                      failed attempt both show its loss: do not sum this column across findings.
UPDATE anomalies
SET impact_gpu_h = f.impact_gpu_h,
    goodput_lost_gpu_h = CASE WHEN anomalies.entity_type IN ('rank', 'job') THEN anomalies.goodput_lost_gpu_h
                              ELSE f.goodput_lost_gpu_h END
FROM (
    WITH exposure AS (
        SELECT c.anomaly_id,
               sum(j.num_gpus * greatest(0, epoch(
                   least(coalesce(a.end_ts, $horizon::TIMESTAMPTZ), coalesce(c.end_ts, $horizon::TIMESTAMPTZ))
                   - greatest(a.start_ts, c.start_ts)))) / 3600.0 AS gpu_h
        FROM anomalies c
        JOIN job_attempts a
          ON (CASE WHEN c.entity_type IN ('rank', 'job') THEN a.job_id = c.job_id ELSE list_contains(a.nodes, c.node) END)
         AND a.start_ts < coalesce(c.end_ts, $horizon::TIMESTAMPTZ)
         AND coalesce(a.end_ts, $horizon::TIMESTAMPTZ) > c.start_ts
        JOIN jobs j ON j.job_id = a.job_id
        GROUP BY c.anomaly_id
    ),
    attempt_loss AS (
        SELECT g.job_id, g.attempt,
               sum(CASE g.category WHEN 'wasted' THEN CAST(g.duration_s AS DOUBLE) * g.gpus
                                   WHEN 'recovery' THEN CAST(g.duration_s AS DOUBLE) * j.num_gpus END) / 3600.0 AS gpu_h
        FROM goodput_segments g JOIN jobs j USING (job_id)
        WHERE g.category IN ('wasted', 'recovery')
        GROUP BY g.job_id, g.attempt
    ),
    lost AS (
        SELECT c.anomaly_id, sum(l.gpu_h) AS gpu_h
        FROM anomalies c
        JOIN attempt_outcomes o
          ON c.entity_type NOT IN ('rank', 'job') AND o.fleet_failure AND o.failure_class = 'hardware'
         AND list_contains(o.implicated_nodes, c.node)
         AND o.end_ts >= c.start_ts - to_seconds($failure_before_s)
         AND o.end_ts <= coalesce(c.end_ts, $horizon::TIMESTAMPTZ) + to_seconds($failure_after_s)
        JOIN attempt_loss l ON l.job_id = o.job_id AND l.attempt = o.attempt
        GROUP BY c.anomaly_id
    )
    SELECT c.anomaly_id, coalesce(e.gpu_h, 0.0) AS impact_gpu_h, coalesce(l.gpu_h, 0.0) AS goodput_lost_gpu_h
    FROM anomalies c LEFT JOIN exposure e USING (anomaly_id) LEFT JOIN lost l USING (anomaly_id)
) f
WHERE anomalies.anomaly_id = f.anomaly_id
