-- Straggler findings: one per straggler episode (`rank_episodes`, written by the rank_slowdown
-- step: a spell in which one rank ran slower than the step reference, found by change-point
-- segmentation and confirmed as an outlier among its attempt's ranks over the same steps).
-- Starts when the episode's first step started; ends when its last step ended, or with the
-- attempt when the episode runs to the attempt's last logged step (NULL while the attempt runs:
-- open). Detected once `$det_changepoint_min_segment` logged steps of it are in.
-- Score = the episode's median ratio. Evidence: steps, ratios, peer z, the rank's whole-attempt
-- verdict (rank_slowdown), drag seconds inside the episode and goodput lost = drag x GPUs / 3600.
SELECT 'rank' AS entity_type, e.node, e.gpu, NULL::VARCHAR AS uuid, e.job_id, e.rank,
       'straggler' AS kind,
       e.start_ts,
       CASE WHEN e.reaches_end THEN a.end_ts ELSE e.end_ts END AS end_ts,
       e.detected_at,
       e.median_ratio AS score,
       'warn' AS severity,
       json_object(
           'attempt', e.attempt,
           'episode', e.episode,
           'first_step', e.first_step,
           'last_step', e.last_step,
           'detected_step', e.detected_step,
           'onset_step', e.first_step,
           'logged_steps', e.rows,
           'open', e.reaches_end,
           'median_ratio_in_episode', round(e.median_ratio, 4),
           'median_ratio_after_onset', round(e.median_ratio, 4),
           'peer_z', round(e.peer_z, 2),
           'rank_median_ratio', round(r.median_ratio, 4),
           'rank_episodes', r.episodes,
           'rank_episode_share', round(r.episode_share, 4),
           'p_value', round(r.p_value, 8),
           'relative_score', round(r.relative_score, 4),
           'drag_s', round(e.drag_s, 3),
           'goodput_lost_gpu_h', round(e.drag_s * j.num_gpus / 3600.0, 4)
       )::VARCHAR AS evidence,
       'watch' AS action
FROM rank_episodes e
JOIN jobs j USING (job_id)
LEFT JOIN job_attempts a USING (job_id, attempt)
LEFT JOIN rank_slowdown r USING (job_id, attempt, rank)
ORDER BY e.job_id, e.attempt, e.rank, e.episode
