-- goodput_inputs_forget: forget every job's digest of its goodput inputs, so every job's goodput
-- rows are built again.
DELETE FROM goodput_inputs
