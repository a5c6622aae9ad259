-- export/goodput_stack: the goodput stack rows whose window starts on the week's Monday, plus the
-- week label as a partition column. Partitioned by cluster and week.
-- Params: $week ('YYYY-Www'), $week_start (DATE).
SELECT *, $week AS week FROM goodput_stack WHERE CAST(window_start AS DATE) = $week_start
