-- Where node_condition_changes is found again from: the earliest node-condition sample loaded
-- since the last compute (NULL when none was).
SELECT min(from_ts) FROM node_conditions_loaded
