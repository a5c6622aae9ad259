-- Clusters of the fleet, for the cluster filter.
SELECT DISTINCT cluster FROM nodes ORDER BY cluster
