-- Week-by-week trend of the weekly review's numbers: the $weeks ISO weeks ending with $week,
-- every cluster and the all-clusters row (cluster '*'; stored as '*' or NULL), from
-- weekly_summary. Ratios 0-1 (summed numerators over summed denominators, as the summary stores
-- them), mtbf_h / mttr_h hours, interruptions per 1,000 GPU-days allocated, escape_rate 0-1 (NULL
-- in a week without fleet failures, or before failure_escapes existed). A week without a
-- summary row has no row here (the chart leaves a gap; never a 0).
-- week_start: the week's Monday (DATE), computed from the label so any summary version works.
-- Also read by the report (`gpufleet report`), which passes the same parameters.
WITH labelled AS (
    SELECT *, CAST(strptime(week || '-1', '%G-W%V-%u') AS DATE) AS monday
    FROM weekly_summary
)
SELECT
    week,
    coalesce(cluster, '*') AS cluster,
    monday AS week_start,
    node_availability,
    job_success_rate,
    job_success_rate_gpu_h,
    goodput,
    ettr,
    mtbf_h,
    mttr_h,
    interruptions_per_1k_gpu_days,
    escape_rate
FROM labelled
WHERE monday <= CAST(strptime($week || '-1', '%G-W%V-%u') AS DATE)
  AND monday > CAST(strptime($week || '-1', '%G-W%V-%u') AS DATE) - 7 * $weeks
ORDER BY coalesce(cluster, '*') = '*' DESC, cluster, monday
