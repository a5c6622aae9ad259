-- gpu_scrape_gaps: per GPU, every two consecutive scrapes (gpu_scrapes rows) further apart than
-- `$det_gap_s` seconds (last_ts, next_ts), plus its last scrape (next_ts NULL): the silences the
-- telemetry-gap detector (queries/detect/telemetry_gaps.sql) weighs against the node's Ready
-- condition and the data horizon.
-- Kept between computes. A pair depends only on its two scrapes and on there being none between
-- them, and loads only add scrapes: after new samples from $changed_from on (gpu_scrapes rows
-- before it are unchanged), only the pairs ending at or after it and each GPU's last row can
-- change. They are taken out and found again from the scrapes since $changed_from plus each GPU's
-- last scrape before it, which is the start of one of the rows taken out when it matters: had its
-- next scrape been at most $det_gap_s later, the new one, no later, cannot make a pair either.
-- Without $incremental (other settings or code, a new table, `compute --force`) the pass's rows
-- are built from all scrapes.
-- Runs in a pass of `gpufleet compute` (`pass_cluster`) on its cluster's `detect_gpu_scrapes`.
-- Params: $incremental, $changed_from, $det_gap_s.
CREATE TABLE IF NOT EXISTS gpu_scrape_gaps (
    cluster VARCHAR,
    node    VARCHAR,
    gpu     SMALLINT,
    last_ts TIMESTAMPTZ,
    next_ts TIMESTAMPTZ
);

CREATE OR REPLACE TEMP TABLE scrape_gaps_reopened AS
SELECT node, gpu, last_ts
FROM gpu_scrape_gaps
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental OR next_ts IS NULL OR next_ts >= $changed_from::TIMESTAMPTZ);

DELETE FROM gpu_scrape_gaps
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental OR next_ts IS NULL OR next_ts >= $changed_from::TIMESTAMPTZ);

INSERT INTO gpu_scrape_gaps
WITH scrapes AS (
    SELECT node, gpu, ts
    FROM detect_gpu_scrapes
    WHERE NOT $incremental OR ts >= $changed_from::TIMESTAMPTZ
    UNION ALL
    SELECT node, gpu, last_ts
    FROM scrape_gaps_reopened
    WHERE last_ts < $changed_from::TIMESTAMPTZ
),
paired AS (
    SELECT node, gpu, ts AS last_ts, lead(ts) OVER (PARTITION BY node, gpu ORDER BY ts) AS next_ts
    FROM scrapes
)
SELECT getvariable('pass_cluster'), node, gpu, last_ts, next_ts
FROM paired
WHERE next_ts IS NULL OR next_ts - last_ts > to_seconds($det_gap_s);

DROP TABLE scrape_gaps_reopened;
