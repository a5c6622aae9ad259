-- export/node_availability_daily: the week's seven UTC days. Partitioned by cluster and day.
-- Params: $week_start (DATE).
SELECT * FROM node_availability_daily
WHERE day >= $week_start AND day < $week_start + INTERVAL 7 DAY
