-- detect_cut_earliest: the earliest instant from which a kept detector's episodes are cut
-- (detect_cut, from queries/detect/kept_cut.sql) and found again.
SELECT min(flags_from) FROM detect_cut
