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

-- Utilisation tables read by weekly_summary and the dashboard: created empty so a database whose
-- derived tables were made elsewhere (hand-made fixtures, an older compute) still answers.
-- queries/derived/team_utilisation_weekly.sql and mig_packing.sql define them.
CREATE TABLE IF NOT EXISTS team_utilisation_weekly (
    cluster VARCHAR, week VARCHAR, team VARCHAR, queue VARCHAR, measured_gpu_h DOUBLE, busy_gpu_h DOUBLE,
    busy_share DOUBLE, idle_gpu_h DOUBLE, jobs BIGINT, top_idle_jobs VARCHAR[], week_start DATE
);

CREATE TABLE IF NOT EXISTS mig_packing (
    cluster VARCHAR, week VARCHAR, workload VARCHAR, gpu_model VARCHAR, jobs BIGINT, job_ids VARCHAR[],
    gpu_h DOUBLE, p95_activity DOUBLE, peak_memory_gib DOUBLE, profile VARCHAR, gpu_share DOUBLE,
    packed_gpu_h DOUBLE, freed_gpu_h DOUBLE, gpus_freed DOUBLE, week_start DATE
);

CREATE TABLE IF NOT EXISTS gpu_utilisation_daily (
    cluster VARCHAR, node VARCHAR, gpu SMALLINT, gpu_i_id SMALLINT, gpu_i_profile VARCHAR, day DATE,
    sampled_h DOUBLE, allocated_h DOUBLE, busy_h DOUBLE, allocated_busy_h DOUBLE, idle_allocated_h DOUBLE,
    mean_activity DOUBLE, p95_activity DOUBLE, peak_memory_gib DOUBLE, mean_memory_gib DOUBLE, jobs BIGINT
);

CREATE TABLE IF NOT EXISTS job_utilisation (
    cluster VARCHAR, job_id VARCHAR, name VARCHAR, team VARCHAR, queue VARCHAR, num_gpus INTEGER,
    allocated_gpu_h DOUBLE, measured_gpu_h DOUBLE, busy_gpu_h DOUBLE, mean_activity DOUBLE,
    p95_activity DOUBLE, peak_memory_gib DOUBLE, idle_gpu_h DOUBLE, gpus_mapped BIGINT, gpus_used BIGINT,
    mapped_by VARCHAR, on_mig BOOLEAN
);
