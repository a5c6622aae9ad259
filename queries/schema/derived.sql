-- Derived tables whose shape is fixed up front because several steps read them.
-- `gpufleet compute` creates them if missing and refills them on every run.

-- One row per finding (SPEC "Anomalies"). end_ts NULL while open.
CREATE TABLE IF NOT EXISTS anomalies (
    anomaly_id   VARCHAR NOT NULL,
    entity_type  VARCHAR NOT NULL,     -- node / gpu / rank
    node         VARCHAR,
    gpu          SMALLINT,
    uuid         VARCHAR,
    job_id       VARCHAR,
    rank         INTEGER,
    kind         VARCHAR NOT NULL,
    start_ts     TIMESTAMPTZ NOT NULL,
    end_ts       TIMESTAMPTZ,
    score        DOUBLE,
    severity     VARCHAR NOT NULL,     -- info / warn / critical
    evidence     VARCHAR,              -- JSON: the values that triggered it
    action       VARCHAR,              -- watch / cordon / drain / reset_gpu / reboot / replace
    impact_gpu_h DOUBLE,               -- GPU-hours of jobs on the entity while open
    goodput_lost_gpu_h DOUBLE          -- goodput lost by the attempts the finding ended (wasted + recovery)
);

-- Databases computed before goodput_lost_gpu_h existed.
ALTER TABLE anomalies ADD COLUMN IF NOT EXISTS goodput_lost_gpu_h DOUBLE;
