-- Where the pass's rows of gpu_activity_windows changed in this compute (the temporary table its
-- statements leave, queries/derived/gpu_activity_windows.sql): the start of the earliest row
-- added, or removed and not put back as it was; NULL when none was. Tables kept by UTC day, week
-- or job of the windows sum again from there on.
SELECT from_ts FROM activity_windows_changed
