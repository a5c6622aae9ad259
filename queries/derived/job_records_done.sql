-- job_records_done: after every pass has summed its changed weeks again, the job records they
-- were summed with are what the next compute compares with (job_records_changed).
CREATE TABLE IF NOT EXISTS job_records_computed (
    cluster VARCHAR,
    job_id  VARCHAR,
    name    VARCHAR,
    team    VARCHAR,
    queue   VARCHAR
);

DELETE FROM job_records_computed;

INSERT INTO job_records_computed
SELECT cluster, job_id, name, team, queue FROM jobs;
