-- week_has_data: whether the weekly summary holds $week (compute writes every week with data).
SELECT count(*) > 0 FROM weekly_summary WHERE week = $week
