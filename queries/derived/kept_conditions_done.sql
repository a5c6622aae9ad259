-- After every pass has brought node_condition_changes up to date: the loads it covered are done.
DELETE FROM node_conditions_loaded
