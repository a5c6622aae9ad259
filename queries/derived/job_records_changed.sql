-- job_records_changed: the ISO weeks (each Monday in epoch microseconds, UTC) that hold activity
-- windows of a job of the pass's cluster whose name, team or queue differ from what the last
-- compute saw (job_records_computed; a job new since then differs too, and so does one whose
-- record is gone). The tables kept by week (team_utilisation_weekly, mig_packing) sum those weeks
-- again besides the weeks whose windows changed: a window's team, queue and workload are its
-- job's, and a job's record can arrive or change after its telemetry.
-- It also defines the macros both tables use to name and choose weeks, so the week arithmetic is
-- written once:
--   iso_week_us(ts)                   the Monday 00:00 UTC of ts's ISO week, in epoch microseconds
--                                     (1970-01-05 was a Monday)
--   week_summed_again(week_start_us, changed_from_ts)
--                                     the week is summed again: it is changed_from_ts's week or a
--                                     later one, or holds windows of a job whose record changed
--   first_week_summed_again(changed_from_ts)
--                                     the start of the earliest such week: windows before it are
--                                     not read
CREATE OR REPLACE TEMP MACRO iso_week_us(ts) AS
    (epoch_us(ts) - 345600000000) // 604800000000 * 604800000000 + 345600000000;

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
SELECT DISTINCT iso_week_us(start_ts) AS week_us
FROM gpu_activity_windows
WHERE cluster = getvariable('pass_cluster')
  AND job_id IN (SELECT job_id FROM changed);

CREATE OR REPLACE TEMP MACRO week_summed_again(week_start_us, changed_from_ts) AS
    week_start_us >= iso_week_us(changed_from_ts)
    OR week_start_us IN (SELECT week_us FROM job_weeks_changed);

CREATE OR REPLACE TEMP MACRO first_week_summed_again(changed_from_ts) AS
    to_timestamp(least(iso_week_us(changed_from_ts), (SELECT min(week_us) FROM job_weeks_changed))
                 // 1000000);
