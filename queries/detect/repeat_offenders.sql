-- Repeat-offender hosts: a node that hosts a straggler rank in at least `$repeat_offender_jobs`
-- distinct jobs within one ISO week (Monday 00:00 UTC .. next Monday). Reads the straggler
-- findings already collected in `anomaly_candidates`. Starts when it became a repeat offender
-- (the start of the straggler in the N-th job); ends with the last of those stragglers (NULL if
-- one is still open). Score = the number of jobs. A straggler finding is one episode; the
-- evidence also counts the episodes across those jobs (a host whose spells repeat).
WITH per_job AS (
    SELECT node, date_trunc('week', start_ts) AS week, job_id,
           min(start_ts) AS start_ts, min(detected_at) AS detected_at, count(*) AS episodes,
           CASE WHEN bool_or(end_ts IS NULL) THEN NULL ELSE max(end_ts) END AS end_ts
    FROM anomaly_candidates
    WHERE kind = 'straggler'
    GROUP BY ALL
),
numbered AS (
    SELECT *, row_number() OVER (PARTITION BY node, week ORDER BY start_ts, job_id) AS nth,
           count(*) OVER (PARTITION BY node, week) AS jobs
    FROM per_job
)
SELECT 'node' AS entity_type, node, NULL::SMALLINT AS gpu, NULL::VARCHAR AS uuid,
       NULL::VARCHAR AS job_id, NULL::INTEGER AS rank, 'repeat_offender' AS kind,
       max(start_ts) FILTER (WHERE nth = $repeat_offender_jobs) AS start_ts,
       CASE WHEN bool_or(end_ts IS NULL) THEN NULL ELSE max(end_ts) END AS end_ts,
       max(detected_at) FILTER (WHERE nth = $repeat_offender_jobs) AS detected_at,
       any_value(jobs)::DOUBLE AS score,
       'warn' AS severity,
       json_object('week', strftime(week, '%G-W%V'), 'jobs', list(job_id ORDER BY start_ts),
                   'episodes', sum(episodes))::VARCHAR AS evidence,
       $det_repeat_offender_action AS action
FROM numbered
WHERE jobs >= $repeat_offender_jobs
GROUP BY node, week
