-- Every node the fleet has (landing table nodes), by name: to check a node named in a link.
SELECT node FROM nodes ORDER BY node
