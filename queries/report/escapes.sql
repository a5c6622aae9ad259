-- report/escapes: the week's fleet failures (failure_escapes) per detector, for $week_start's ISO week
-- and $cluster ('*' = all). detector: the kind of the first signal that saw the failure coming, or for
-- an escape the first that opened after it (within failures.after_end_s), 'none' when nothing did.
-- catches = failures it saw coming (placed_on_flagged + seen_before_failure), escapes = those it saw
-- only after the job failed; placed_on_flagged of its catches; median_lead_h over its catches (hours);
-- late_remediation_gpu_h = GPU-hours lost by the failures it caught (wasted progress + recovery).
SELECT detector,
       count(*) FILTER (WHERE NOT escaped) AS catches,
       count(*) FILTER (WHERE escaped) AS escapes,
       count(*) FILTER (WHERE placed_on_flagged) AS placed_on_flagged,
       median(lead_time_s) FILTER (WHERE NOT escaped) / 3600.0 AS median_lead_h,
       sum(late_remediation_gpu_s) / 3600.0 AS late_remediation_gpu_h
FROM failure_escapes
WHERE week = strftime($week_start::DATE, '%G-W%V')
  AND ($cluster = '*' OR cluster = $cluster)
GROUP BY detector
ORDER BY catches + escapes DESC, late_remediation_gpu_h DESC, detector
