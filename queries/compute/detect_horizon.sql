-- detect_horizon: the data horizon (an earlier step's data_horizon): findings still open then are
-- open; no row or NULL when nothing is loaded.
SELECT horizon_ts FROM data_horizon
