-- Note, in the load's transaction, that node-condition samples from $from_ts on were stored
-- (queries/derived/node_condition_changes.sql finds their changes from there).
INSERT INTO node_conditions_loaded VALUES ($from_ts)
