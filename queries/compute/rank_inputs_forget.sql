-- rank_inputs_forget: forget every job's digest of its rank inputs, so every job is computed again.
DELETE FROM rank_slowdown_inputs
