-- node_condition_changes: every change of status of a node's condition (not `Unschedulable`:
-- cordoning is an operator action), plus each condition's first sample (first_sample; no status
-- before it): what the flapping detector (queries/detect/condition_flaps.sql) counts.
-- Kept between computes. A change at time t depends only on the samples at t and just before it,
-- so condition samples loaded from $changed_from on can change only the rows from there on: they
-- are taken out and found again from the samples since then, each condition starting from the
-- status it had before $changed_from (its latest row kept: the status only changes at a row).
-- Without $incremental (other code, a new table, `compute --force`) the pass's rows are built from
-- all samples; with no condition sample loaded since the last compute $changed_from is after them.
-- Runs in a pass of `gpufleet compute` (`pass_cluster`; node_conditions is its cluster's).
-- Params: $incremental, $changed_from.
CREATE TABLE IF NOT EXISTS node_condition_changes (
    cluster      VARCHAR,
    node         VARCHAR,
    condition    VARCHAR,
    ts           TIMESTAMPTZ,
    status       VARCHAR,
    first_sample BOOLEAN
);

DELETE FROM node_condition_changes
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental OR ts >= $changed_from::TIMESTAMPTZ);

INSERT INTO node_condition_changes
WITH status_before AS (
    SELECT node, condition, max(ts) AS ts, arg_max(status, ts) AS status
    FROM node_condition_changes
    WHERE cluster = getvariable('pass_cluster')
    GROUP BY node, condition
),
samples AS (
    SELECT node, condition, ts, status, false AS carried
    FROM node_conditions
    WHERE condition <> 'Unschedulable'
      AND (NOT $incremental OR ts >= $changed_from::TIMESTAMPTZ)
    UNION ALL
    SELECT node, condition, ts, status, true FROM status_before
),
ordered AS (
    SELECT *, lag(status) OVER (PARTITION BY node, condition ORDER BY ts) AS prev_status
    FROM samples
)
SELECT getvariable('pass_cluster'), node, condition, ts, status, prev_status IS NULL
FROM ordered
WHERE NOT carried AND (prev_status IS NULL OR status <> prev_status);
