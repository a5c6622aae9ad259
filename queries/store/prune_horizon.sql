-- prune_horizon: where `gpufleet prune --keep-raw $keep_raw_s` cuts the raw GPU samples: the UTC
-- midnight at or before the newest data horizon (of any cluster) minus the time kept, and the
-- cut of earlier prunes (NULL when none), which raw samples older than are gone already.
SELECT
    make_timestamptz(
        (epoch_us(max(horizon_ts)) - CAST($keep_raw_s AS BIGINT) * 1000000) // 86400000000 * 86400000000
    ) AS pruned_before,
    (SELECT max(pruned_before) FROM raw_retention) AS pruned_already
FROM data_horizon
