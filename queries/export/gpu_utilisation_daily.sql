-- export/gpu_utilisation_daily: the week's seven UTC days, per GPU and MIG instance.
-- Partitioned by cluster and day. Ordered as the table was when every compute built it whole: it
-- is kept between computes now, and its updated days lie after the others.
-- Params: $week_start (DATE).
SELECT * FROM gpu_utilisation_daily
WHERE day >= $week_start AND day < $week_start + INTERVAL 7 DAY
ORDER BY cluster, node, gpu, gpu_i_id NULLS FIRST, day
