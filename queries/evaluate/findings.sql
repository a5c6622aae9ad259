-- evaluate/findings: every finding of one simulated seed, scored against the simulator's truth.
SELECT * FROM anomalies
