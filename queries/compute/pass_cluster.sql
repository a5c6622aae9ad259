-- pass_cluster: the cluster of the pass that runs now; steps that keep rows between computes key
-- them by it (getvariable('pass_cluster')).
SET VARIABLE pass_cluster = $cluster
