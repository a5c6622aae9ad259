-- export/mig_packing: the week's MIG packing advice (docs/metrics.md "MIG packing").
-- Partitioned by cluster and week. Params: $week ('YYYY-Www').
SELECT * FROM mig_packing WHERE week = $week
