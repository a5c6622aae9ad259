-- Every anomaly kind with its class (hardware / infrastructure / straggler), the entity it names
-- and what it means, from queries/data/anomaly_kinds.csv (`$anomaly_kinds`). Job failure classes
-- count anomalies of class `hardware` as hardware signals.
SELECT kind, class, entity, description
FROM read_csv($anomaly_kinds, header = true, columns = {
    'kind': 'VARCHAR', 'class': 'VARCHAR', 'entity': 'VARCHAR', 'description': 'VARCHAR'})
