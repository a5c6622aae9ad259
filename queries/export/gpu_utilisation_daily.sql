-- export/gpu_utilisation_daily: the week's seven UTC days, per GPU and MIG instance.
-- Partitioned by cluster and day. Params: $week_start (DATE).
SELECT * FROM gpu_utilisation_daily
WHERE day >= $week_start AND day < $week_start + INTERVAL 7 DAY
