-- xid_catalogue: NVIDIA XID codes with their class, severity and remediation action, loaded from
-- the CSV at $xid_catalogue_path (bundled: queries/data/xid_catalogue.csv).
--   class    hardware (blame the GPU/board), driver, application (the workload's own fault; must not
--            blame the GPU: e.g. XID 13, 31, 43, 45)
--   severity info / warn / critical
--   action   the remediation ladder step: watch / cordon / drain / reset_gpu / reboot / replace
CREATE OR REPLACE TABLE xid_catalogue AS
SELECT code, name, class, severity, action, description
FROM read_csv($xid_catalogue_path, header = true, auto_detect = false,
    columns = {'code': 'INTEGER', 'name': 'VARCHAR', 'class': 'VARCHAR', 'severity': 'VARCHAR',
               'action': 'VARCHAR', 'description': 'VARCHAR'})
