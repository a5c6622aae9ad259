-- export/goodput_stack: the goodput stack rows whose window starts on the week's Monday.
-- Partitioned by cluster and week (the view's own `week` column).
-- Params: $week_start (DATE).
SELECT * FROM goodput_stack WHERE CAST(window_start AS DATE) = $week_start
