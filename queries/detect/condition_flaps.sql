-- Condition flapping: a node condition whose status changes at least `$det_flap_transitions` times
-- within `$det_flap_window_s` seconds (e.g. NetworkingReady True/False every few minutes).
-- `Unschedulable` is excluded: cordoning is an operator action, not a health signal.
-- Transitions flagged that way and closer than the window form one episode: start = the first
-- transition of the first full window, detected at the transition that completed it, end = the
-- last transition (NULL when the episode is still within one window of the horizon `$horizon`).
-- Score = the most transitions seen in one window.
WITH transitions AS (
    -- Every change of status (not the first sample): the kept table of
    -- queries/derived/node_condition_changes.sql, the pass's cluster's rows.
    SELECT node, condition, ts, status FROM node_condition_changes WHERE NOT first_sample
),
windowed AS (
    SELECT *,
           count(*) OVER recent AS window_transitions,
           min(ts) OVER recent AS window_first
    FROM transitions
    WINDOW recent AS (PARTITION BY node, condition ORDER BY ts
                      RANGE BETWEEN to_seconds($det_flap_window_s) PRECEDING AND CURRENT ROW)
),
flagged AS (
    SELECT *, lag(ts) OVER (PARTITION BY node, condition ORDER BY ts) AS prev_ts
    FROM windowed WHERE window_transitions >= $det_flap_transitions
),
islands AS (
    SELECT *,
           sum(CASE WHEN prev_ts IS NULL OR ts - prev_ts > to_seconds($det_flap_window_s) THEN 1 ELSE 0 END)
               OVER (PARTITION BY node, condition ORDER BY ts) AS episode
    FROM flagged
)
SELECT 'node' AS entity_type, node, NULL::SMALLINT AS gpu, NULL::VARCHAR AS uuid,
       NULL::VARCHAR AS job_id, NULL::INTEGER AS rank, 'condition_flap' AS kind,
       min(window_first) AS start_ts,
       CASE WHEN max(ts) >= $horizon::TIMESTAMPTZ - to_seconds($det_flap_window_s) THEN NULL
            ELSE max(ts) END AS end_ts,
       min(ts) AS detected_at,
       max(window_transitions)::DOUBLE AS score,
       'warn' AS severity,
       json_object('condition', condition, 'transitions_in_window', max(window_transitions),
                   'window_s', $det_flap_window_s, 'last_status', arg_max(status, ts))::VARCHAR AS evidence,
       'cordon' AS action
FROM islands
GROUP BY node, condition, episode
