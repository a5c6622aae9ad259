-- node_state_intervals: the state of every node at every instant of its fleet lifetime
-- (SPEC "Metric definitions", docs/metrics.md "Node state and availability").
--
-- One row per maximal half-open interval [start_ts, end_ts) with one state and one reason:
--   state  : maintenance / unavailable / unknown / degraded / available (first match wins, in that order:
--            a known-bad signal outranks missing data)
--   reason : why (several reasons of the winning state are joined with '; '); NULL when available.
-- Per node the intervals do not overlap, adjacent intervals never share state and reason,
-- and together they cover the lifetime exactly.
--
-- Lifetime of a node (data_horizon): a node of the `nodes` inventory is in the fleet from the start
-- of the data (the earliest node condition or DCGM sample in the store) to the data horizon; a node
-- seen in samples but absent from `nodes` from its first sample, and it is `unknown` throughout.
-- Silence is `unknown` (fail closed): a node that never reports, or goes silent, stays `unknown`
-- until it reports again or the horizon.
--
-- Anomalies: an open anomaly of severity warn or critical on a usable node makes it `degraded`
-- (an open one holds until the horizon).
--
-- Freshness: a sample at ts vouches for [ts, ts + $staleness_s), and for a condition only until the
-- next sample of that condition replaces its status.
--
-- Kept between computes. The state at an instant t depends only on the samples in
-- (t - $staleness_s, t], the maintenance windows and findings that cover t, the node's inventory row
-- and the conditions it has ever reported, its lifetime and the horizon. So a compute finds, per
-- node, the earliest instant whose inputs may have changed (`from`: the earliest sample loaded since
-- the last compute, $changed_from; the start of a maintenance window or finding added or gone, or
-- the earlier end of one whose end changed; at the latest the old horizon, where the last interval
-- ends), cuts the node's intervals at `from`, builds the states after it again from the samples
-- since `from` minus $staleness_s, and joins the two intervals at the cut when the state and
-- reason go on across it. A node whose inventory row
-- changed, which reported a condition new to it, or which got a sample before its lifetime began is
-- built again whole. What the intervals were built from besides the samples is kept in
-- node_state_inputs. Without $incremental (other settings or code, a new table, `compute --force`)
-- the pass's rows are built from all samples.
--
-- Cost: the per-scrape table gpu_scrapes (a row per GPU and scrape that reported any DCGM field;
-- it outlives `gpufleet prune`) is read from the rebuild on (aggregated into staleness-wide buckets
-- per GPU), turned into runs of fresh telemetry with window functions; everything after that works
-- on small per-node interval sets (boundary sweep). No per-minute grid, no cross join with time.
--
-- Runs in a pass of `gpufleet compute` (`pass_cluster`; its landing tables are its cluster's).
-- Parameters: $staleness_s (seconds), $require_gpu_telemetry (bool), $required_conditions (list;
-- empty = every condition seen for the node), $good_when_true_suffixes (list), $incremental,
-- $changed_from.
CREATE TABLE IF NOT EXISTS node_state_intervals (
    node     VARCHAR,
    start_ts TIMESTAMPTZ,
    end_ts   TIMESTAMPTZ,
    state    VARCHAR,
    reason   VARCHAR,
    cluster  VARCHAR
);

-- The inputs besides samples, as they are now: maintenance windows and findings (as the signals
-- below word them; an open finding's end NULL), inventory rows, and the conditions each node has
-- reported (those kept plus those in the new samples).
CREATE OR REPLACE TEMP TABLE state_inputs_now AS
SELECT node, 'maintenance' AS kind, start_ts, end_ts,
    'maintenance' || coalesce(': ' || nullif(reason, ''), '') AS detail
FROM maintenance
UNION ALL
SELECT node, 'degraded', start_ts, end_ts, 'anomaly: ' || kind || coalesce(' on gpu ' || gpu, '')
FROM anomalies
WHERE severity IN ('warn', 'critical') AND node IS NOT NULL
UNION ALL
SELECT node, 'inventory', NULL, NULL, CAST(gpu_count AS VARCHAR)
FROM nodes
UNION
(
    SELECT node, 'condition', NULL, NULL, detail
    FROM node_state_inputs
    WHERE cluster = getvariable('pass_cluster') AND kind = 'condition' AND $incremental
    UNION
    SELECT DISTINCT node, 'condition', NULL, NULL, condition
    FROM node_conditions
    WHERE NOT $incremental OR ts >= $changed_from::TIMESTAMPTZ
);

-- Per node kept from the last compute: the instant from which it is built again, NULL to build
-- it whole.
CREATE OR REPLACE TEMP TABLE state_rebuild AS
WITH kept AS (
    SELECT node, kind, start_ts, end_ts, detail
    FROM node_state_inputs
    WHERE cluster = getvariable('pass_cluster') AND $incremental
),
changed AS (
    (SELECT * FROM state_inputs_now EXCEPT SELECT * FROM kept WHERE kind <> 'lifetime')
    UNION ALL
    (SELECT * FROM kept WHERE kind <> 'lifetime' EXCEPT SELECT * FROM state_inputs_now)
),
-- A window or finding added or gone changes the states from its start; one whose end alone
-- changed (a finding closed) only from the earlier of its ends (an open one holds to the horizon).
signal_changes AS (
    SELECT node, kind, start_ts, detail,
        count(*) AS versions, min(coalesce(end_ts, 'infinity'::TIMESTAMPTZ)) AS first_end
    FROM changed
    WHERE kind IN ('maintenance', 'degraded')
    GROUP BY node, kind, start_ts, detail
),
changed_per_node AS (
    SELECT node,
        min(CASE WHEN versions > 1 THEN first_end ELSE start_ts END) AS signal_from,
        false AS whole
    FROM signal_changes
    GROUP BY node
    UNION ALL
    SELECT node, NULL, true
    FROM changed
    WHERE kind = 'inventory' OR (kind = 'condition' AND len($required_conditions) = 0)
    GROUP BY node
),
-- The last interval ends at the old horizon (k.end_ts): the states after it are new.
node_from AS (
    SELECT k.node, k.start_ts AS lifetime_start,
        coalesce(bool_or(c.whole), false) AS whole,
        least($changed_from::TIMESTAMPTZ, k.end_ts, (SELECT horizon_ts FROM data_horizon),
              min(c.signal_from)) AS from_ts
    FROM kept k
    LEFT JOIN changed_per_node c USING (node)
    WHERE k.kind = 'lifetime'
    GROUP BY k.node, k.start_ts, k.end_ts
)
SELECT node, CASE WHEN NOT whole AND from_ts > lifetime_start THEN from_ts END AS rebuild_from
FROM node_from;
-- The samples are read from here on: the state at the earliest rebuilt instant needs those up to
-- $staleness_s before it. A node not kept from the last compute has every sample after it (they
-- are new, or at the last horizon, after every interval's start), so this reads them all.
SET VARIABLE state_read_from = (
    SELECT coalesce(min(coalesce(rebuild_from, '-infinity'::TIMESTAMPTZ)), '-infinity'::TIMESTAMPTZ)
        - to_seconds($staleness_s)
    FROM state_rebuild
);

-- Every node of the inventory is in the fleet from the start of the data, whether it reports or
-- not (silence is `unknown`, never absence); a node seen only in samples from its first sample
-- (kept from the last compute, or in the samples read). from_ts: where its intervals are built from.
CREATE OR REPLACE TEMP TABLE state_lifetimes AS
WITH horizon AS (
    SELECT data_start_ts, horizon_ts FROM data_horizon
),
firsts AS (
    SELECT node, start_ts AS first_ts
    FROM node_state_inputs
    WHERE cluster = getvariable('pass_cluster') AND kind = 'lifetime' AND $incremental
    UNION ALL
    SELECT node, min(ts) FROM node_conditions WHERE ts >= getvariable('state_read_from') GROUP BY node
    UNION ALL
    SELECT node, min(ts) FROM gpu_scrapes WHERE ts >= getvariable('state_read_from') GROUP BY node
    UNION ALL
    SELECT n.node, h.data_start_ts FROM nodes n CROSS JOIN horizon h
)
SELECT s.node, min(s.first_ts) AS start_ts, any_value(h.horizon_ts) AS end_ts,
    bool_or(n.node IS NOT NULL) AS in_inventory,
    coalesce(any_value(r.rebuild_from), min(s.first_ts)) AS from_ts
FROM firsts s
CROSS JOIN horizon h
LEFT JOIN nodes n ON n.node = s.node
LEFT JOIN state_rebuild r ON r.node = s.node
GROUP BY s.node
HAVING min(s.first_ts) < any_value(h.horizon_ts);

-- Out go the intervals built again: all but those of kept nodes before their rebuild, and the
-- interval holding a rebuild's start now ends there.
DELETE FROM node_state_intervals i
WHERE cluster = getvariable('pass_cluster')
  AND NOT EXISTS (
      SELECT 1 FROM state_rebuild r JOIN state_lifetimes l USING (node)
      WHERE r.node = i.node AND i.start_ts < r.rebuild_from
  );

UPDATE node_state_intervals i
SET end_ts = r.rebuild_from
FROM state_rebuild r
WHERE i.cluster = getvariable('pass_cluster') AND i.node = r.node
  AND i.start_ts < r.rebuild_from AND i.end_ts > r.rebuild_from;

INSERT INTO node_state_intervals
WITH
-- The one pass over gpu_scrapes (from state_read_from on), aggregated into staleness-wide time
-- buckets per GPU. Two ticks in one bucket are less than staleness apart, so only the gaps between
-- consecutive non-empty buckets (next first tick - previous last tick) can break freshness: exact,
-- and ~10x fewer rows for the window functions than distinct ticks.
gpu_buckets AS (
    SELECT node, gpu, min(ts) AS first_ts, max(ts) AS last_ts
    FROM gpu_scrapes
    WHERE ts >= getvariable('state_read_from')
    GROUP BY node, gpu, floor(epoch(ts) / $staleness_s)
),
-- One window pass: a bucket starts a fresh run when the previous one ended more than staleness
-- before it, and ends one when the next starts more than staleness after it (or there is none).
gpu_run_edges AS (
    SELECT node, gpu, first_ts, last_ts,
        coalesce(epoch(first_ts) - epoch(lag(last_ts) OVER w) > $staleness_s, true) AS is_start,
        coalesce(epoch(lead(first_ts) OVER w) - epoch(last_ts) > $staleness_s, true) AS is_end
    FROM gpu_buckets
    WINDOW w AS (PARTITION BY node, gpu ORDER BY first_ts)
    QUALIFY is_start OR is_end
),
-- Runs of fresh telemetry per GPU; on the few edge rows, starts and ends alternate.
gpu_fresh AS (
    SELECT node, gpu, start_ts, end_ts + to_seconds($staleness_s) AS end_ts
    FROM (
        SELECT node, gpu, is_start, first_ts AS start_ts,
            CASE WHEN is_end THEN last_ts ELSE lead(last_ts) OVER (PARTITION BY node, gpu ORDER BY first_ts) END AS end_ts
        FROM gpu_run_edges
    )
    WHERE is_start
),
-- Condition samples, bucketed the same way. A bucket whose samples all carry the same status and
-- reason is one piece; the rare bucket with a change inside is expanded back into its samples.
cond_buckets AS (
    SELECT node, condition, floor(epoch(ts) / $staleness_s) AS bucket,
        min(ts) AS first_ts, max(ts) AS last_ts,
        min(status) AS status, max(status) AS max_status,
        min(coalesce(reason, '')) AS reason, max(coalesce(reason, '')) AS max_reason
    FROM node_conditions
    WHERE (len($required_conditions) = 0 OR list_contains($required_conditions, condition))
      AND ts >= getvariable('state_read_from')
    GROUP BY node, condition, bucket
),
cond_pieces AS (
    SELECT node, condition, first_ts, last_ts, status, reason
    FROM cond_buckets
    WHERE status = max_status AND reason = max_reason
    UNION ALL
    SELECT c.node, c.condition, c.ts, c.ts, c.status, coalesce(c.reason, '')
    FROM node_conditions c
    JOIN cond_buckets b
        ON c.node = b.node AND c.condition = b.condition AND floor(epoch(c.ts) / $staleness_s) = b.bucket
    WHERE (b.status <> b.max_status OR b.reason <> b.max_reason) AND c.ts >= getvariable('state_read_from')
),
cond_samples AS (
    SELECT node, condition, first_ts, last_ts,
        CASE
            WHEN status = 'Unknown' THEN 'unknown'
            WHEN (status = 'True') = (len(list_filter($good_when_true_suffixes, lambda s: ends_with(condition, s))) > 0)
                THEN 'good'
            ELSE 'unavailable'
        END AS verdict,
        CASE
            WHEN condition = 'Unschedulable' AND status = 'True' THEN 'cordoned'
            ELSE condition || '=' || status || coalesce(' (' || nullif(reason, '') || ')', '')
        END AS why
    FROM cond_pieces
),
-- One window pass over the pieces: where fresh runs and status runs start and end.
cond_edges AS (
    SELECT node, condition, first_ts AS ts, verdict, why,
        coalesce(epoch(first_ts) - epoch(lag(last_ts) OVER w) > $staleness_s, true) AS starts_fresh,
        coalesce(epoch(lead(first_ts) OVER w) - epoch(last_ts) > $staleness_s, true) AS ends_fresh,
        -- A sample holds until the next one replaces it or it goes stale, whichever is first.
        least(last_ts + to_seconds($staleness_s), coalesce(lead(first_ts) OVER w, last_ts + to_seconds($staleness_s)))
            AS valid_until,
        starts_fresh OR verdict IS DISTINCT FROM lag(verdict) OVER w OR why IS DISTINCT FROM lag(why) OVER w
            AS starts_status,
        ends_fresh OR verdict IS DISTINCT FROM lead(verdict) OVER w OR why IS DISTINCT FROM lead(why) OVER w
            AS ends_status
    FROM cond_samples
    WINDOW w AS (PARTITION BY node, condition ORDER BY first_ts)
    QUALIFY starts_status OR ends_status
),
cond_fresh AS (
    SELECT node, condition, start_ts, end_ts
    FROM (
        SELECT node, condition, starts_fresh, ts AS start_ts,
            CASE WHEN ends_fresh THEN valid_until
                 ELSE lead(valid_until) OVER (PARTITION BY node, condition ORDER BY ts) END AS end_ts
        FROM cond_edges
        WHERE starts_fresh OR ends_fresh
    )
    WHERE starts_fresh
),
cond_bad AS (
    SELECT node, verdict AS kind, why AS reason, start_ts, end_ts
    FROM (
        SELECT node, verdict, why, starts_status, ts AS start_ts,
            CASE WHEN ends_status THEN valid_until
                 ELSE lead(valid_until) OVER (PARTITION BY node, condition ORDER BY ts) END AS end_ts
        FROM cond_edges
    )
    WHERE starts_status AND verdict <> 'good'
),
lifetimes AS (
    SELECT node, start_ts, end_ts, in_inventory, from_ts FROM state_lifetimes
),
-- Every series that must stay fresh: the required conditions and GPUs 0 .. gpu_count-1.
required_series AS (
    SELECT node, 'condition' AS series_kind, detail AS series
    FROM state_inputs_now
    WHERE kind = 'condition' AND len($required_conditions) = 0
    UNION ALL
    SELECT l.node, 'condition', unnest($required_conditions)
    FROM lifetimes l
    WHERE len($required_conditions) > 0
    UNION ALL
    SELECT l.node, 'gpu', CAST(unnest(generate_series(0, n.gpu_count - 1)) AS VARCHAR)
    FROM lifetimes l JOIN nodes n ON n.node = l.node
    UNION ALL
    -- the node as a whole: fresh while any of its conditions or GPUs is
    SELECT node, 'node', 'any' FROM lifetimes
),
fresh AS (
    SELECT node, 'condition' AS series_kind, condition AS series, start_ts, end_ts FROM cond_fresh
    UNION ALL
    SELECT node, 'gpu', CAST(gpu AS VARCHAR), start_ts, end_ts FROM gpu_fresh
    UNION ALL
    SELECT node, 'node', 'any', start_ts, end_ts FROM cond_fresh
    UNION ALL
    SELECT node, 'node', 'any', start_ts, end_ts FROM gpu_fresh
),
-- Stale stretches: the gaps between fresh runs, with zero-length sentinels at both lifetime ends.
fresh_with_ends AS (
    SELECT f.node, f.series_kind, f.series,
        greatest(f.start_ts, l.from_ts) AS start_ts, least(f.end_ts, l.end_ts) AS end_ts
    FROM fresh f
    JOIN required_series r USING (node, series_kind, series)
    JOIN lifetimes l USING (node)
    UNION ALL
    SELECT r.node, r.series_kind, r.series, l.from_ts, l.from_ts
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
-- The runs are made distinct first: GPUs that report together have equal runs, and two window
-- passes may order equal rows differently, so one of them could join the group before a gap.
dcgm_present AS (
    SELECT node, min(start_ts) AS start_ts, max(end_ts) AS end_ts
    FROM (
        SELECT *, sum(starts::INTEGER) OVER (PARTITION BY node ORDER BY start_ts, end_ts ROWS UNBOUNDED PRECEDING) AS grp
        FROM (
            SELECT node, start_ts, end_ts,
                coalesce(start_ts > max(end_ts) OVER (PARTITION BY node ORDER BY start_ts, end_ts
                                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS starts
            FROM (SELECT DISTINCT node, start_ts, end_ts FROM gpu_fresh)
        )
    )
    GROUP BY node, grp
),
-- Every fact that can decide a state, as (node, kind, interval, reason).
signals_raw AS (
    -- an open finding holds until the horizon
    SELECT node, kind, start_ts, coalesce(end_ts, (SELECT horizon_ts FROM data_horizon)) AS end_ts,
        detail AS reason
    FROM state_inputs_now
    WHERE kind IN ('maintenance', 'degraded')
    UNION ALL
    SELECT node, 'unknown', start_ts, end_ts, series || ' stale'
    FROM stale WHERE series_kind = 'condition'
    UNION ALL
    -- reason: the GPU index; segment_reasons words it ("gpu 3", "gpus 1, 3", "any GPU").
    SELECT node, 'gpu_missing', start_ts, end_ts, series
    FROM stale WHERE series_kind = 'gpu'
    UNION ALL
    SELECT node, 'silent', start_ts, end_ts, NULL
    FROM stale WHERE series_kind = 'node'
    UNION ALL
    SELECT node, kind, start_ts, end_ts, reason FROM cond_bad
    UNION ALL
    SELECT node, 'dcgm_present', start_ts, end_ts, NULL FROM dcgm_present
    UNION ALL
    SELECT node, 'unknown', start_ts, end_ts, 'not in nodes inventory'
    FROM lifetimes WHERE NOT in_inventory
),
signals AS (
    SELECT s.node, s.kind, greatest(s.start_ts, l.from_ts) AS start_ts,
        least(s.end_ts, l.end_ts) AS end_ts, s.reason
    FROM signals_raw s JOIN lifetimes l USING (node)
    WHERE greatest(s.start_ts, l.from_ts) < least(s.end_ts, l.end_ts)
),
boundaries AS (
    SELECT node, from_ts AS ts FROM lifetimes
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
    SELECT g.node, g.start_ts, g.end_ts, any_value(n.gpu_count) AS gpu_count,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason) FILTER (WHERE s.kind = 'maintenance') AS maintenance_why,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason) FILTER (WHERE s.kind = 'unknown') AS unknown_why,
        list(DISTINCT TRY_CAST(s.reason AS INTEGER) ORDER BY TRY_CAST(s.reason AS INTEGER))
            FILTER (WHERE s.kind = 'gpu_missing') AS missing_gpus,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason) FILTER (WHERE s.kind = 'unavailable') AS unavailable_why,
        coalesce(bool_or(s.kind = 'dcgm_present'), false) AS dcgm_present,
        coalesce(bool_or(s.kind = 'silent'), false) AS silent,
        string_agg(DISTINCT s.reason, '; ' ORDER BY s.reason) FILTER (WHERE s.kind = 'degraded') AS degraded_why
    FROM segments g
    LEFT JOIN signals s ON s.node = g.node AND s.start_ts <= g.start_ts AND s.end_ts >= g.end_ts
    LEFT JOIN nodes n ON n.node = g.node
    GROUP BY g.node, g.start_ts, g.end_ts
),
segment_reasons AS (
    SELECT *,
        CASE
            WHEN missing_gpus IS NULL THEN NULL
            WHEN len(missing_gpus) = gpu_count AND gpu_count > 1 THEN 'no DCGM sample from any GPU'
            WHEN len(missing_gpus) = 1 THEN 'no DCGM sample from gpu ' || missing_gpus[1]
            ELSE 'no DCGM sample from gpus ' || array_to_string(missing_gpus, ', ')
        END AS missing_gpu_why
    FROM segment_facts
),
segment_states AS (
    SELECT node, start_ts, end_ts, state_reason[1] AS state, state_reason[2] AS reason
    FROM (
        SELECT *,
            CASE
                WHEN maintenance_why IS NOT NULL THEN ['maintenance', maintenance_why]
                -- A known-bad signal outranks missing data: a GPU that fell off the bus also stops
                -- reporting, and that time belongs to the failure (the bad condition, the cordon).
                WHEN unavailable_why IS NOT NULL
                    THEN ['unavailable', concat_ws('; ', unavailable_why, CASE WHEN dcgm_present THEN missing_gpu_why END)]
                WHEN unknown_why IS NOT NULL OR (missing_gpu_why IS NOT NULL AND $require_gpu_telemetry)
                    THEN ['unknown', concat_ws('; ', unknown_why, CASE WHEN $require_gpu_telemetry THEN missing_gpu_why END)]
                -- nothing required is missing (no condition ever seen, GPU telemetry optional), yet
                -- nothing reports at all: still unknown, never available
                WHEN silent THEN ['unknown', 'no samples from the node']
                -- GPU telemetry optional: fewer GPUs reporting than expected (while some do) is unavailable
                WHEN dcgm_present AND missing_gpu_why IS NOT NULL THEN ['unavailable', missing_gpu_why]
                WHEN degraded_why IS NOT NULL THEN ['degraded', degraded_why]
                ELSE ['available', NULL]
            END AS state_reason
        FROM segment_reasons
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
SELECT node, min(start_ts) AS start_ts, max(end_ts) AS end_ts, any_value(state) AS state,
    any_value(reason) AS reason, getvariable('pass_cluster') AS cluster
FROM merged
GROUP BY node, grp, state, reason
ORDER BY node, start_ts;

-- Where the state and reason go on across a rebuild's start, the two intervals are one.
CREATE OR REPLACE TEMP TABLE state_seams AS
SELECT n.node, n.start_ts AS seam_ts, n.end_ts
FROM node_state_intervals n
JOIN state_rebuild r ON r.node = n.node AND n.start_ts = r.rebuild_from
JOIN node_state_intervals k
    ON k.cluster = n.cluster AND k.node = n.node AND k.end_ts = n.start_ts
   AND k.state = n.state AND k.reason IS NOT DISTINCT FROM n.reason
WHERE n.cluster = getvariable('pass_cluster');

DELETE FROM node_state_intervals i
USING state_seams s
WHERE i.cluster = getvariable('pass_cluster') AND i.node = s.node AND i.start_ts = s.seam_ts;

UPDATE node_state_intervals i
SET end_ts = s.end_ts
FROM state_seams s
WHERE i.cluster = getvariable('pass_cluster') AND i.node = s.node AND i.end_ts = s.seam_ts;

-- What these intervals were built from besides the samples, for the next compute.
DELETE FROM node_state_inputs WHERE cluster = getvariable('pass_cluster');

INSERT INTO node_state_inputs
SELECT getvariable('pass_cluster'), node, kind, start_ts, end_ts, detail FROM state_inputs_now
UNION ALL
SELECT getvariable('pass_cluster'), node, 'lifetime', start_ts, end_ts, NULL FROM state_lifetimes;

DROP TABLE state_inputs_now;
DROP TABLE state_rebuild;
DROP TABLE state_lifetimes;
DROP TABLE state_seams;
