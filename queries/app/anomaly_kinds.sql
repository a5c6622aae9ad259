-- Anomaly kinds present in the database, for the kind filter.
SELECT DISTINCT kind FROM anomalies ORDER BY kind
