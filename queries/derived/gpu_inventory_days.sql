-- gpu_inventory_days: what gpu_inventory is summed from, per (cluster, node, gpu index, uuid) and
-- UTC day of the samples: first and last sample seen and the sample count, read from the fields
-- every dcgm-exporter configuration exports (temperature, power, SM clock). Kept between computes
-- (pipelines/kept_rows.py): a day's row depends on that day's samples alone, so with $incremental
-- the days from $changed_from's on (the 15-minute bucket of the earliest GPU sample loaded since
-- the last compute, never before the prune's cut, a UTC midnight) are summed again and every
-- earlier day stands. Without it every day of the pass's cluster is, and the rows of the samples
-- `gpufleet prune` dropped before (gpu_inventory_pruned) come in once, as day NULL: after that a
-- prune only drops samples of days already summed here.
-- Params: $incremental, $changed_from.
CREATE TABLE IF NOT EXISTS gpu_inventory_days (
    cluster  VARCHAR NOT NULL,
    node     VARCHAR NOT NULL,
    gpu      SMALLINT NOT NULL,
    uuid     VARCHAR,
    day      DATE,
    first_ts TIMESTAMPTZ NOT NULL,
    last_ts  TIMESTAMPTZ NOT NULL,
    samples  BIGINT NOT NULL
);

DELETE FROM gpu_inventory_days
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental OR day >= CAST($changed_from::TIMESTAMPTZ AT TIME ZONE 'UTC' AS DATE));

INSERT INTO gpu_inventory_days
SELECT getvariable('pass_cluster'), node, gpu, uuid,
       -- The UTC day by integer arithmetic, as the utilisation tables take it.
       DATE '1970-01-01' + CAST(epoch_us(ts) // 86400000000 AS INTEGER) AS day,
       min(ts), max(ts), count(*)
FROM gpu_samples
WHERE metric IN ('DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_SM_CLOCK')
  -- from the UTC midnight at or before $changed_from
  AND ts >= make_timestamptz(epoch_us($changed_from::TIMESTAMPTZ) // 86400000000 * 86400000000)
GROUP BY node, gpu, uuid, day
UNION ALL
SELECT getvariable('pass_cluster'), node, gpu, uuid, NULL, first_ts, last_ts, samples
FROM gpu_inventory_pruned
WHERE NOT $incremental;
