-- compute_log_add: record a finished compute (inside its transaction, so a failed one leaves no row).
INSERT INTO compute_log VALUES ($data_version, $settings, now(), $duration_s)
