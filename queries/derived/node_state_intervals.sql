-- node_state_intervals: the state of every node at every instant of its fleet lifetime
-- (SPEC "Metric definitions", docs/metrics.md "Node state and availability").
--
-- One row per maximal half-open interval [start_ts, end_ts) with one state and one reason:
--   state  : maintenance / unknown / unavailable / degraded / available (first match wins, in that order)
--   reason : why (several reasons of the winning state are joined with '; '); NULL when available.
-- Per node the intervals do not overlap, adjacent intervals never share state and reason,
-- and together they cover the lifetime exactly.
--
-- Lifetime of a node: from its first sample (node condition or DCGM sample) to the data horizon,
-- the latest sample time of any node in the store. A node that goes silent is `unknown` until
-- the horizon (fail closed). A node seen in samples but absent from `nodes` is `unknown` throughout.
--
-- Freshness: a sample at ts vouches for [ts, ts + $staleness_s), and for a condition only until the
-- next sample of that condition replaces its status.
--
-- Cost: gpu_samples is read once (distinct node, gpu, ts), turned into runs of fresh telemetry with
-- window functions; everything after that works on small per-node interval sets (boundary sweep).
--
-- Parameters: $staleness_s (seconds), $require_gpu_telemetry (bool), $required_conditions (list;
-- empty = every condition seen for the node), $good_when_true_suffixes (list).
CREATE OR REPLACE TABLE node_state_intervals AS
WITH
horizon AS (
    SELECT max(ts) AS horizon_ts
    FROM (
        SELECT max(ts) AS ts FROM node_conditions
        UNION ALL
        SELECT max(ts) FROM gpu_samples
    )
),
-- The single pass over gpu_samples: every instant a GPU reported any field.
gpu_ticks AS (
    SELECT node, gpu, ts FROM gpu_samples GROUP BY node, gpu, ts
),
gpu_ticks_flagged AS (
    SELECT node, gpu, ts,
        coalesce(epoch(ts) - epoch(lag(ts) OVER w) > $staleness_s, false) AS starts_run
    FROM gpu_ticks
    WINDOW w AS (PARTITION BY node, gpu ORDER BY ts)
),
-- Runs of fresh telemetry per GPU: consecutive samples no more than staleness apart.
gpu_fresh AS (
    SELECT node, gpu, min(ts) AS start_ts, max(ts) + to_seconds($staleness_s) AS end_ts
    FROM (
        SELECT *, sum(starts_run::INTEGER) OVER (PARTITION BY node, gpu ORDER BY ts ROWS UNBOUNDED PRECEDING) AS run
        FROM gpu_ticks_flagged
    )
    GROUP BY node, gpu, run
),
cond_samples AS (
    SELECT node, condition, ts, status,
        CASE
            WHEN status = 'Unknown' THEN 'unknown'
            WHEN (status = 'True') = (len(list_filter($good_when_true_suffixes, lambda s: ends_with(condition, s))) > 0)
                THEN 'good'
            ELSE 'unavailable'
        END AS verdict,
        CASE
            WHEN condition = 'Unschedulable' AND status = 'True' THEN 'cordoned'
            ELSE condition || '=' || status || coalesce(' (' || nullif(reason, '') || ')', '')
        END AS why,
        lag(ts) OVER w AS prev_ts,
        lead(ts) OVER w AS next_ts
    FROM node_conditions
    WHERE len($required_conditions) = 0 OR list_contains($required_conditions, condition)
    WINDOW w AS (PARTITION BY node, condition ORDER BY ts)
),
cond_flagged AS (
    SELECT *,
        coalesce(epoch(ts) - epoch(prev_ts) > $staleness_s, false) AS starts_fresh_run,
        coalesce(epoch(ts) - epoch(prev_ts) > $staleness_s, true)
            OR verdict IS DISTINCT FROM lag(verdict) OVER w
            OR why IS DISTINCT FROM lag(why) OVER w AS starts_status_run,
        -- A sample holds until the next one replaces it or it goes stale, whichever is first.
        least(ts + to_seconds($staleness_s), coalesce(next_ts, ts + to_seconds($staleness_s))) AS valid_until
    FROM cond_samples
    WINDOW w AS (PARTITION BY node, condition ORDER BY ts)
),
cond_numbered AS (
    SELECT *,
        sum(starts_fresh_run::INTEGER) OVER w AS fresh_run,
        sum(starts_status_run::INTEGER) OVER w AS status_run
    FROM cond_flagged
    WINDOW w AS (PARTITION BY node, condition ORDER BY ts ROWS UNBOUNDED PRECEDING)
),
cond_fresh AS (
    SELECT node, condition, min(ts) AS start_ts, max(valid_until) AS end_ts
    FROM cond_numbered GROUP BY node, condition, fresh_run
),
cond_bad AS (
    SELECT node, any_value(verdict) AS kind, any_value(why) AS reason,
        min(ts) AS start_ts, max(valid_until) AS end_ts
    FROM cond_numbered
    WHERE verdict <> 'good'
    GROUP BY node, condition, status_run
),
lifetimes AS (
    SELECT s.node, min(s.first_ts) AS start_ts, any_value(h.horizon_ts) AS end_ts,
        bool_or(n.node IS NOT NULL) AS in_inventory
    FROM (
        SELECT node, min(ts) AS first_ts FROM node_conditions GROUP BY node
        UNION ALL
        SELECT node, min(start_ts) FROM gpu_fresh GROUP BY node
    ) s
    CROSS JOIN horizon h
    LEFT JOIN nodes n ON n.node = s.node
    GROUP BY s.node
    HAVING min(s.first_ts) < any_value(h.horizon_ts)
),
-- Every series that must stay fresh: the required conditions and GPUs 0 .. gpu_count-1.
required_series AS (
    SELECT DISTINCT c.node, 'condition' AS series_kind, c.condition AS series
    FROM node_conditions c
    WHERE len($required_conditions) = 0
    UNION ALL
    SELECT l.node, 'condition', unnest($required_conditions)
    FROM lifetimes l
    WHERE len($required_conditions) > 0
    UNION ALL
    SELECT l.node, 'gpu', CAST(unnest(generate_series(0, n.gpu_count - 1)) AS VARCHAR)
    FROM lifetimes l JOIN nodes n ON n.node = l.node
),
fresh AS (
    SELECT node, 'condition' AS series_kind, condition AS series, start_ts, end_ts FROM cond_fresh
    UNION ALL
    SELECT node, 'gpu', CAST(gpu AS VARCHAR), start_ts, end_ts FROM gpu_fresh
),
-- Stale stretches: the gaps between fresh runs, with zero-length sentinels at both lifetime ends.
fresh_with_ends AS (
    SELECT f.node, f.series_kind, f.series,
        greatest(f.start_ts, l.start_ts) AS start_ts, least(f.end_ts, l.end_ts) AS end_ts
    FROM fresh f
    JOIN required_series r USING (node, series_kind, series)
    JOIN lifetimes l USING (node)
    UNION ALL
    SELECT r.node, r.series_kind, r.series, l.start_ts, l.start_ts
    FROM required_series r JOIN lifetimes l USING (node)
    UNION ALL
    SELECT r.node, r.series_kind, r.series, l.end_ts, l.end_ts
    FROM required_series r JOIN lifetimes l USING (node)
),
stale AS (
    SELECT node, series_kind, series, start_ts, end_ts
    FROM (
        SELECT node, series_kind, series,
            max(end_ts) OVER (PARTITION BY node, series_kind, series ORDER BY start_ts, end_ts
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS start_ts,
            start_ts AS end_ts
        FROM fresh_with_ends
    )
    WHERE start_ts < end_ts
),
-- Instants when at least one GPU of the node reports: "fewer GPUs than expected" needs a report.
dcgm_present AS (
    SELECT node, min(start_ts) AS start_ts, max(end_ts) AS end_ts
    FROM (
        SELECT *, sum(starts::INTEGER) OVER (PARTITION BY node ORDER BY start_ts, end_ts ROWS UNBOUNDED PRECEDING) AS grp
        FROM (
            SELECT node, start_ts, end_ts,
                coalesce(start_ts > max(end_ts) OVER (PARTITION BY node ORDER BY start_ts, end_ts
                                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS starts
            FROM gpu_fresh
        )
    )
    GROUP BY node, grp
),
-- Every fact that can decide a state, as (node, kind, interval, reason).
signals_raw AS (
    SELECT node, 'maintenance' AS kind, start_ts, end_ts,
        'maintenance' || coalesce(': ' || nullif(reason, ''), '') AS reason
    FROM maintenance
    UNION ALL
    SELECT node, 'unknown', start_ts, end_ts, series || ' stale'
    FROM stale WHERE series_kind = 'condition'
    UNION ALL
    SELECT node, 'gpu_missing', start_ts, end_ts, 'no DCGM sample from gpu ' || series
    FROM stale WHERE series_kind = 'gpu'
    UNION ALL
    SELECT node, kind, start_ts, end_ts, reason FROM cond_bad
    UNION ALL
    SELECT node, 'dcgm_present', start_ts, end_ts, NULL FROM dcgm_present
    UNION ALL
    SELECT a.node, 'degraded', a.start_ts, coalesce(a.end_ts, h.horizon_ts),
        'anomaly: ' || a.kind || coalesce(' on gpu ' || a.gpu, '')
    FROM anomalies a CROSS JOIN horizon h
    WHERE a.severity = 'warn' AND a.node IS NOT NULL
    UNION ALL
    SELECT node, 'unknown', start_ts, end_ts, 'not in nodes inventory'
    FROM lifetimes WHERE NOT in_inventory
),
signals AS (
    SELECT s.node, s.kind, greatest(s.start_ts, l.start_ts) AS start_ts,
        least(s.end_ts, l.end_ts) AS end_ts, s.reason
    FROM signals_raw s JOIN lifetimes l USING (node)
    WHERE greatest(s.start_ts, l.start_ts) < least(s.end_ts, l.end_ts)
),
boundaries AS (
    SELECT node, start_ts AS ts FROM lifetimes
    UNION
    SELECT node, end_ts FROM lifetimes
    UNION
    SELECT node, start_ts FROM signals
    UNION
    SELECT node, end_ts FROM signals
),
segments AS (
    SELECT node, ts AS start_ts, lead(ts) OVER (PARTITION BY node ORDER BY ts) AS end_ts
    FROM boundaries
    QUALIFY end_ts IS NOT NULL
),
segment_facts AS (
    SELECT g.node, g.start_ts, g.end_ts,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason) FILTER (WHERE s.kind = 'maintenance') AS maintenance_why,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason)
            FILTER (WHERE s.kind = 'unknown' OR (s.kind = 'gpu_missing' AND $require_gpu_telemetry)) AS unknown_why,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason) FILTER (WHERE s.kind = 'unavailable') AS unavailable_why,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason)
            FILTER (WHERE s.kind = 'gpu_missing' AND NOT $require_gpu_telemetry) AS missing_gpu_why,
        coalesce(bool_or(s.kind = 'dcgm_present'), false) AS dcgm_present,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason) FILTER (WHERE s.kind = 'degraded') AS degraded_why
    FROM segments g
    LEFT JOIN signals s ON s.node = g.node AND s.start_ts <= g.start_ts AND s.end_ts >= g.end_ts
    GROUP BY g.node, g.start_ts, g.end_ts
),
segment_states AS (
    SELECT node, start_ts, end_ts, state_reason[1] AS state, state_reason[2] AS reason
    FROM (
        SELECT *,
            CASE
                WHEN maintenance_why IS NOT NULL THEN ['maintenance', maintenance_why]
                WHEN unknown_why IS NOT NULL THEN ['unknown', unknown_why]
                WHEN unavailable_why IS NOT NULL OR (dcgm_present AND missing_gpu_why IS NOT NULL)
                    THEN ['unavailable', concat_ws('; ', unavailable_why, CASE WHEN dcgm_present THEN missing_gpu_why END)]
                WHEN degraded_why IS NOT NULL THEN ['degraded', degraded_why]
                ELSE ['available', NULL]
            END AS state_reason
        FROM segment_facts
    )
),
-- Merge adjacent segments that share state and reason.
merged AS (
    SELECT node, state, reason, start_ts, end_ts,
        sum(starts::INTEGER) OVER (PARTITION BY node ORDER BY start_ts ROWS UNBOUNDED PRECEDING) AS grp
    FROM (
        SELECT *,
            coalesce(state IS DISTINCT FROM lag(state) OVER w OR reason IS DISTINCT FROM lag(reason) OVER w, true) AS starts
        FROM segment_states
        WINDOW w AS (PARTITION BY node ORDER BY start_ts)
    )
)
SELECT node, min(start_ts) AS start_ts, max(end_ts) AS end_ts, any_value(state) AS state, any_value(reason) AS reason
FROM merged
GROUP BY node, grp, state, reason
ORDER BY node, start_ts
