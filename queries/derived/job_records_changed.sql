-- job_records_changed: the ISO weeks (each Monday in epoch microseconds, UTC) that hold activity
-- windows of a job of the pass's cluster whose name, team or queue differ from what the last
-- compute saw (job_records_computed; a job new since then differs too, and so does one whose
-- record is gone). The tables kept by week (team_utilisation_weekly, mig_packing) sum those weeks
-- again besides the weeks whose windows changed: a window's team, queue and workload are its
-- job's, and a job's record can arrive or change after its telemetry.
CREATE TABLE IF NOT EXISTS job_records_computed (
    cluster VARCHAR,
    job_id  VARCHAR,
    name    VARCHAR,
    team    VARCHAR,
    queue   VARCHAR
);

CREATE OR REPLACE TEMP TABLE job_weeks_changed AS
WITH now AS (
    SELECT job_id, name, team, queue FROM jobs WHERE cluster = getvariable('pass_cluster')
),
computed AS (
    SELECT job_id, name, team, queue FROM job_records_computed
    WHERE cluster = getvariable('pass_cluster')
),
changed AS (
    (FROM now EXCEPT FROM computed) UNION (FROM computed EXCEPT FROM now)
)
SELECT DISTINCT
    (epoch_us(start_ts) - 345600000000) // 604800000000 * 604800000000 + 345600000000 AS week_us
FROM gpu_activity_windows
WHERE cluster = getvariable('pass_cluster')
  AND job_id IN (SELECT job_id FROM changed);
