-- goodput_inputs_note: note the digest of every job of the pass's cluster (goodput_jobs), built
-- under the settings and code `goodput_basis` (set by goodput_jobs), for the next compute to
-- compare with.
DELETE FROM goodput_inputs WHERE cluster = getvariable('pass_cluster');
INSERT INTO goodput_inputs
SELECT getvariable('pass_cluster'), job_id, inputs, getvariable('goodput_basis') FROM goodput_jobs;
DROP TABLE goodput_jobs;
