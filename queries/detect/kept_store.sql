-- A kept detector's candidates of this compute (temporary table `detect_found`, the episodes it
-- re-found) plus the settled ones the last compute found (ending before $settle_before), kept for
-- the next compute with the basis (settings and code) they were found with, then added to the
-- pass's anomaly candidates.
-- Params: $detector, $settle_before, $basis.
INSERT INTO detect_found
SELECT entity_type, node, gpu, uuid, job_id, rank, kind, start_ts, end_ts, detected_at, score,
       severity, evidence, action
FROM kept_candidates
WHERE cluster = getvariable('pass_cluster') AND detector = $detector
  AND end_ts < $settle_before::TIMESTAMPTZ;

DELETE FROM kept_candidates WHERE cluster = getvariable('pass_cluster') AND detector = $detector;

INSERT INTO kept_candidates SELECT getvariable('pass_cluster'), $detector, * FROM detect_found;

DELETE FROM kept_candidates_basis WHERE cluster = getvariable('pass_cluster') AND detector = $detector;

INSERT INTO kept_candidates_basis VALUES (getvariable('pass_cluster'), $detector, $basis);

INSERT INTO anomaly_candidates SELECT * FROM detect_found;

DROP TABLE detect_found;
