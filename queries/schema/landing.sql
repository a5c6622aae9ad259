-- Landing tables: what every source lands as (SPEC "Landing contract").
-- Timestamps are UTC TIMESTAMPTZ, intervals half-open [start, end), durations in seconds.
-- Natural keys (used for idempotent loads) are listed in pipelines/contract.py; every one starts
-- with `cluster` (SPEC "Fleet-wide identity"): node names and job ids repeat across clusters.
-- No PRIMARY KEY indexes: at fleet scale they cost more than the anti-join the loader runs.

CREATE TABLE IF NOT EXISTS nodes (
    node          VARCHAR NOT NULL,
    cluster       VARCHAR NOT NULL,
    instance_type VARCHAR,
    gpu_model     VARCHAR,
    gpu_count     INTEGER NOT NULL,
    nic_expected  INTEGER           -- network links the node should have up; NULL = not checked
);

-- Samples as a scrape sees them, not transitions. A cordon is condition `Unschedulable`.
CREATE TABLE IF NOT EXISTS node_conditions (
    cluster   VARCHAR NOT NULL,
    ts        TIMESTAMPTZ NOT NULL,
    node      VARCHAR NOT NULL,
    condition VARCHAR NOT NULL,
    status    VARCHAR NOT NULL,     -- True / False / Unknown
    reason    VARCHAR,
    message   VARCHAR
);

-- One DCGM field of one GPU at one scrape. `metric` is the DCGM field name.
-- Stored compactly (a week of a 4,096-GPU fleet is billions of samples): each series (cluster,
-- node, gpu, uuid, metric) once in gpu_series, each sample as (ts, series id, value) in
-- gpu_sample_values. The view gpu_samples has the contract's columns; read that.
CREATE TABLE IF NOT EXISTS gpu_series (
    series_id INTEGER NOT NULL,
    cluster   VARCHAR NOT NULL,
    node      VARCHAR NOT NULL,
    gpu       SMALLINT NOT NULL,      -- GPU index on the node
    uuid      VARCHAR,
    metric    VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS gpu_sample_values (
    ts        TIMESTAMPTZ NOT NULL,
    series_id INTEGER NOT NULL,
    value     DOUBLE NOT NULL
);

CREATE VIEW IF NOT EXISTS gpu_samples AS
SELECT s.cluster, v.ts, s.node, s.gpu, s.uuid, s.metric, v.value
FROM gpu_sample_values v JOIN gpu_series s USING (series_id);

-- One DCGM field of one MIG instance at one scrape (dcgm-exporter's `GPU_I_ID`, `GPU_I_PROFILE`).
-- Kept apart from gpu_samples so health, availability and the detectors read only whole-device
-- series; an instance belongs to the physical GPU (node, gpu), which every GPU event names.
-- `job_id` is the job dcgm-exporter's labels name for the instance (Slurm `hpc_job`;
-- Kubernetes `namespace/<job>` from the pod's owner), NULL when unlabelled.
CREATE TABLE IF NOT EXISTS gpu_instance_samples (
    cluster       VARCHAR NOT NULL,
    ts            TIMESTAMPTZ NOT NULL,
    node          VARCHAR NOT NULL,
    gpu           SMALLINT NOT NULL,   -- index of the physical GPU on the node
    uuid          VARCHAR,             -- the physical GPU's UUID
    gpu_i_id      SMALLINT NOT NULL,   -- MIG GPU instance id
    gpu_i_profile VARCHAR,             -- e.g. 3g.40gb
    job_id        VARCHAR,
    metric        VARCHAR NOT NULL,
    value         DOUBLE NOT NULL
);

-- Node-level telemetry: network links up, NIC error counters.
CREATE TABLE IF NOT EXISTS node_samples (
    cluster   VARCHAR NOT NULL,
    ts     TIMESTAMPTZ NOT NULL,
    node   VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    value  DOUBLE NOT NULL
);

CREATE TABLE IF NOT EXISTS gpu_events (
    cluster   VARCHAR NOT NULL,
    ts      TIMESTAMPTZ NOT NULL,
    node    VARCHAR NOT NULL,
    gpu     SMALLINT,               -- NULL when the event names no GPU we could map
    uuid    VARCHAR,
    kind    VARCHAR NOT NULL,       -- xid, ...
    code    INTEGER,
    message VARCHAR,
    source  VARCHAR                 -- dcgm, kernel-log, simulator, ...
);

CREATE TABLE IF NOT EXISTS jobs (
    cluster   VARCHAR NOT NULL,
    job_id    VARCHAR NOT NULL,
    name      VARCHAR,
    "user"    VARCHAR,
    team      VARCHAR,
    queue     VARCHAR,
    submit_ts TIMESTAMPTZ,
    start_ts  TIMESTAMPTZ,
    end_ts    TIMESTAMPTZ,          -- NULL while running
    num_gpus  INTEGER NOT NULL,
    state     VARCHAR NOT NULL,     -- succeeded, failed, node_fail, timeout, oom, cancelled, preempted, running
    exit_code INTEGER,
    reason    VARCHAR
);

CREATE TABLE IF NOT EXISTS job_attempts (
    cluster   VARCHAR NOT NULL,
    job_id    VARCHAR NOT NULL,
    attempt   INTEGER NOT NULL,     -- 0, 1, ...
    start_ts  TIMESTAMPTZ NOT NULL,
    end_ts    TIMESTAMPTZ,          -- NULL while running
    state     VARCHAR NOT NULL,
    exit_code INTEGER,
    reason    VARCHAR,
    nodes     VARCHAR[] NOT NULL
);

-- Per-rank step timings: `step_s` wall time of the step on that rank, `compute_s`
-- its busy time without collective wait (NULL when the job does not log it).
CREATE TABLE IF NOT EXISTS rank_steps (
    cluster   VARCHAR NOT NULL,
    job_id    VARCHAR NOT NULL,
    attempt   INTEGER NOT NULL,
    step      INTEGER NOT NULL,
    rank      INTEGER NOT NULL,
    node      VARCHAR NOT NULL,
    gpu       SMALLINT,
    end_ts    TIMESTAMPTZ NOT NULL,
    step_s    DOUBLE NOT NULL,
    compute_s DOUBLE
);

CREATE TABLE IF NOT EXISTS checkpoints (
    cluster   VARCHAR NOT NULL,
    job_id     VARCHAR NOT NULL,
    attempt    INTEGER NOT NULL,
    step       INTEGER NOT NULL,
    kind       VARCHAR NOT NULL,    -- save / restore
    start_ts   TIMESTAMPTZ NOT NULL,
    duration_s DOUBLE NOT NULL
);

CREATE TABLE IF NOT EXISTS maintenance (
    cluster   VARCHAR NOT NULL,
    node     VARCHAR NOT NULL,
    start_ts TIMESTAMPTZ NOT NULL,
    end_ts   TIMESTAMPTZ NOT NULL,
    reason   VARCHAR
);

-- Bookkeeping: one row per committed load batch that added or changed rows (a batch that
-- changed nothing writes none); the max id is the data version `gpufleet compute` compares
-- against to skip work on an unchanged database. `rows_new` counts rows added or updated.
CREATE TABLE IF NOT EXISTS load_log (
    batch_id  BIGINT NOT NULL,
    loaded_at TIMESTAMPTZ NOT NULL,
    source    VARCHAR NOT NULL,
    tables    VARCHAR[] NOT NULL,
    rows_in   BIGINT NOT NULL,
    rows_new  BIGINT NOT NULL
);

-- GPU and MIG-instance samples loaded since the last `gpufleet compute`: the earliest sample time
-- of each load that stored any. The compute rebuilds gpu_scrapes, gpu_samples_15m and the changed
-- rows of gpu_activity_windows from the earliest of them on and empties this table, in its
-- transaction (pipelines/sample_rollups.py, pipelines/activity_windows.py).
CREATE TABLE IF NOT EXISTS gpu_samples_loaded (
    from_ts TIMESTAMPTZ NOT NULL
);

-- Node-condition samples loaded since the last `gpufleet compute`: the earliest sample time of
-- each load that stored any. The compute finds node_condition_changes again from the earliest of
-- them on and empties this table, in its transaction (queries/derived/node_condition_changes.sql).
CREATE TABLE IF NOT EXISTS node_conditions_loaded (
    from_ts TIMESTAMPTZ NOT NULL
);

-- Jobs whose rank steps were loaded since the last `gpufleet compute`, one row per job and load
-- that stored any. The compute summarises those jobs' steps again (rank_step_summaries) and
-- empties this table, in its transaction (pipelines/step_summaries.py).
CREATE TABLE IF NOT EXISTS rank_steps_loaded (
    cluster VARCHAR NOT NULL,
    job_id  VARCHAR NOT NULL
);

-- One row per logged training step (cluster, job, attempt, step): what goodput_steps reads of the
-- step's ranks, kept between computes so an update summarises only the jobs whose rank steps were
-- loaded since (queries/derived/rank_step_summaries.sql). `compute --force`, other code or a
-- cluster without its kept_rows_basis row summarise every job again.
CREATE TABLE IF NOT EXISTS rank_step_summaries (
    cluster              VARCHAR NOT NULL,
    job_id               VARCHAR NOT NULL,
    attempt              INTEGER NOT NULL,
    step                 BIGINT NOT NULL,
    end_us               BIGINT,
    longest_step_us      BIGINT,
    ranks                BIGINT,
    uses_compute         BOOLEAN,
    max_compute_s        DOUBLE,
    median_compute_s     DOUBLE,
    max_step_s           DOUBLE,
    median_step_s        DOUBLE,
    slowest_compute_rank INTEGER,
    slowest_step_rank    INTEGER
);

-- The GPUs each attempt's ranks logged on each node (cluster, job, attempt, node, gpu), kept with
-- rank_step_summaries and summarised again for the same jobs (queries/derived/rank_step_summaries.sql):
-- gpu_job_assignments reads it instead of every rank's row.
CREATE TABLE IF NOT EXISTS rank_gpus (
    cluster VARCHAR NOT NULL,
    job_id  VARCHAR NOT NULL,
    attempt INTEGER NOT NULL,
    node    VARCHAR NOT NULL,
    gpu     SMALLINT NOT NULL
);

-- Derived tables kept between computes and brought up to date from the loads since (rather
-- than rebuilt), each with the time it was last rebuilt in full. A kept table without its row
-- here (an older database) is rebuilt in full by the next compute.
CREATE TABLE IF NOT EXISTS kept_tables (
    table_name   VARCHAR NOT NULL,
    rebuilt_at   TIMESTAMPTZ NOT NULL
);

-- What the last compute computed each job's rank_slowdown and rank_episodes rows from: a digest
-- of the job's steps (rank count and end of each, from rank_step_summaries) and step drags, and the settings and code that computed them
-- (queries/derived/rank_slowdown_jobs.sql). A job whose digest and basis are unchanged keeps its
-- rows; `compute --force` empties this table.
CREATE TABLE IF NOT EXISTS rank_slowdown_inputs (
    cluster VARCHAR NOT NULL,
    job_id  VARCHAR NOT NULL,
    inputs  HUGEINT NOT NULL,
    basis   VARCHAR NOT NULL
);

-- What the last compute built each job's goodput_steps, job_stalls, goodput_segments and
-- job_goodput rows from: a digest of the job's goodput_attempts and goodput_checkpoints rows, its
-- step summaries and whether its records have an end (queries/derived/goodput_jobs.sql), and the
-- settings and code that built them. A job whose digest and basis are unchanged keeps its rows;
-- `compute --force` empties this table.
CREATE TABLE IF NOT EXISTS goodput_inputs (
    cluster VARCHAR NOT NULL,
    job_id  VARCHAR NOT NULL,
    inputs  HUGEINT NOT NULL,
    basis   VARCHAR NOT NULL
);

-- The candidates of the detectors kept between computes (pipelines/detectors/__init__.py
-- KEPT_DETECTORS), per cluster and detector, with the settings and code that found them: a compute
-- re-finds only the episodes that new data can still change and keeps the settled ones.
-- `compute --force` empties both tables.
CREATE TABLE IF NOT EXISTS kept_candidates (
    cluster     VARCHAR NOT NULL,
    detector    VARCHAR NOT NULL,
    entity_type VARCHAR,
    node        VARCHAR,
    gpu         SMALLINT,
    uuid        VARCHAR,
    job_id      VARCHAR,
    rank        INTEGER,
    kind        VARCHAR,
    start_ts    TIMESTAMPTZ,
    end_ts      TIMESTAMPTZ,
    detected_at TIMESTAMPTZ,
    score       DOUBLE,
    severity    VARCHAR,
    evidence    VARCHAR,
    action      VARCHAR
);

-- The settings and code each cluster's rows of a kept derived table were built with
-- (pipelines/activity_windows.py): other ones rebuild that cluster's rows. `compute --force`
-- empties it.
CREATE TABLE IF NOT EXISTS kept_rows_basis (
    cluster    VARCHAR NOT NULL,
    table_name VARCHAR NOT NULL,
    basis      VARCHAR NOT NULL
);

-- What each cluster's node_state_intervals were built from besides the samples, per node: its
-- lifetime (kind `lifetime`: start and horizon), inventory row (`inventory`: GPU count),
-- conditions reported (`condition`), maintenance windows (`maintenance`) and findings
-- (`degraded`; an open one's end NULL), as queries/derived/node_state_intervals.sql words them. A
-- compute builds again a node's intervals from the earliest instant these changed.
CREATE TABLE IF NOT EXISTS node_state_inputs (
    cluster  VARCHAR NOT NULL,
    node     VARCHAR NOT NULL,
    kind     VARCHAR NOT NULL,
    start_ts TIMESTAMPTZ,
    end_ts   TIMESTAMPTZ,
    detail   VARCHAR
);

CREATE TABLE IF NOT EXISTS kept_candidates_basis (
    cluster  VARCHAR NOT NULL,
    detector VARCHAR NOT NULL,
    basis    VARCHAR NOT NULL
);

-- One row per `gpufleet prune --keep-raw` that dropped samples: GPU samples older than
-- `pruned_before` are gone from gpu_sample_values, apart from the error-counter series the
-- detectors re-read on every compute (queries/store/prune_raw.sql). The kept tables gpu_scrapes
-- and gpu_samples_15m keep their rows before it, even through `compute --force`, and a load of
-- GPU samples older than it is refused.
CREATE TABLE IF NOT EXISTS raw_retention (
    pruned_before   TIMESTAMPTZ NOT NULL,
    keep_raw_s      BIGINT NOT NULL,
    pruned_at       TIMESTAMPTZ NOT NULL,
    samples_dropped BIGINT NOT NULL
);

-- gpu_inventory's rows for the samples a prune dropped (one per cluster, node, GPU index and UUID:
-- first and last sample, sample count), which queries/derived/gpu_inventory_days.sql adds to the
-- rows of the samples still stored when it sums every day again: the inventory outlives the raw
-- samples it was read from.
CREATE TABLE IF NOT EXISTS gpu_inventory_pruned (
    cluster  VARCHAR NOT NULL,
    node     VARCHAR NOT NULL,
    gpu      SMALLINT NOT NULL,
    uuid     VARCHAR,
    first_ts TIMESTAMPTZ NOT NULL,
    last_ts  TIMESTAMPTZ NOT NULL,
    samples  BIGINT NOT NULL
);

-- Incremental sources (Prometheus) keep how far they have read, per query.
CREATE TABLE IF NOT EXISTS ingest_watermarks (
    source       VARCHAR NOT NULL,
    query_key    VARCHAR NOT NULL,
    watermark_ts TIMESTAMPTZ NOT NULL
);

-- GPU identities as dcgm-exporter labels them, kept by the Prometheus ingest (newest wins
-- per node and GPU index). The kernel-log ingest maps an `NVRM: Xid (PCI:...)` bus id to
-- the GPU index and UUID through it. `pci_bus_id` is normalised to `dddd:bb:dd` lower case.
CREATE TABLE IF NOT EXISTS gpu_devices (
    node         VARCHAR NOT NULL,
    gpu          SMALLINT NOT NULL,
    uuid         VARCHAR,
    pci_bus_id   VARCHAR,
    last_seen_ts TIMESTAMPTZ NOT NULL
);

-- Windows a Prometheus-compatible store answered only in part (API `warnings`, VictoriaMetrics
-- `isPartial`), loaded anyway with `ingest prometheus --allow-partial`. Every later run fetches
-- them again; a complete answer fills the window and removes its row. Read by the dashboard's
-- data status and the report ("telemetry incomplete from the store for ...").
CREATE TABLE IF NOT EXISTS ingest_incomplete (
    source      VARCHAR NOT NULL,
    query_key   VARCHAR NOT NULL,
    start_ts    TIMESTAMPTZ NOT NULL,   -- the window [start_ts, end_ts)
    end_ts      TIMESTAMPTZ NOT NULL,
    warning     VARCHAR NOT NULL,       -- what the store said
    recorded_at TIMESTAMPTZ NOT NULL
);

-- Per load batch of a Prometheus run that met partial answers (same batch_id as load_log):
-- how many chunks stayed partial after the retries, how many of them were loaded as
-- incomplete (--allow-partial; the rest were left for the next run), and the store's words.
CREATE TABLE IF NOT EXISTS ingest_partial_log (
    batch_id       BIGINT NOT NULL,
    source         VARCHAR NOT NULL,
    partial_chunks INTEGER NOT NULL,
    loaded_chunks  INTEGER NOT NULL,
    warning        VARCHAR NOT NULL
);
