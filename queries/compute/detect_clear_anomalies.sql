-- detect_clear_anomalies: `anomalies` is refilled from every detector's candidates each pass.
DELETE FROM anomalies
