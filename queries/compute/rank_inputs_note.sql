-- rank_inputs_note: note the digest of every job of the pass's cluster, computed under settings
-- $basis, for the next compute to compare with.
DELETE FROM rank_slowdown_inputs WHERE cluster = getvariable('pass_cluster');
INSERT INTO rank_slowdown_inputs
SELECT getvariable('pass_cluster'), job_id, inputs, $basis FROM rank_slowdown_jobs;
DROP TABLE rank_slowdown_jobs;
