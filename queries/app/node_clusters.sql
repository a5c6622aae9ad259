-- The clusters that have a node named $node (landing table nodes): one for a name unique in the
-- fleet, several for a shared one, none for an unknown one. The node page resolves `?node=`
-- without `?cluster=` with it.
SELECT cluster FROM nodes WHERE node = $node ORDER BY cluster
