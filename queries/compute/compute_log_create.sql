-- compute_log_create: one row per finished compute: the data version (load batch) it was built
-- from, the fingerprint of the settings it used, when, and how long it took.
CREATE TABLE IF NOT EXISTS compute_log (
    data_version BIGINT,
    settings VARCHAR,
    computed_at TIMESTAMPTZ,
    duration_s DOUBLE
)
