"""Settings from `gpufleet.toml`, with documented defaults.

Every threshold an SRE may want to tune lives here, not in SQL or code:
the SQL reads them as named parameters (`$staleness_s`, ...).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from pydantic.dataclasses import dataclass

from pipelines.errors import ConfigError
from pipelines.settings_model import SECTION, build_section
from pipelines.sql import queries_dir

if TYPE_CHECKING:
    from pipelines.sources.prometheus import PrometheusSettings

Share = Annotated[float, Field(ge=0, le=1)]
"""A fraction of a whole, 0 to 1."""

DEFAULT_DB = "fleet.duckdb"
DEFAULT_CONFIG = "gpufleet.toml"


@dataclass(frozen=True, config=SECTION)
class AvailabilitySettings:
    staleness_s: PositiveInt = 300
    """A condition or GPU without a sample this many seconds old is `unknown`."""
    require_gpu_telemetry: bool = True
    """A GPU with no fresh DCGM sample makes its node `unknown` (fail closed)."""
    required_conditions: list[str] = field(default_factory=list)
    """Conditions that count; empty means every condition seen for a node."""
    good_when_true_suffixes: list[str] = field(default_factory=lambda: ["Ready", "Healthy"])
    """Conditions named so (or exactly so) are good when `True`; all others when `False`."""


@dataclass(frozen=True, config=SECTION)
class FailureSettings:
    before_end_s: NonNegativeInt = 600
    """Hardware signals this many seconds before an attempt ended implicate it."""
    after_end_s: NonNegativeInt = 300
    """... and this many seconds after."""
    crash_loop_min_failures: PositiveInt = 3
    """A job with this many `software` failed attempts is crash-looping."""
    hardware_anomaly_kinds: list[str] = field(
        default_factory=lambda: [
            "xid",
            "ecc_sbe_rate",
            "ecc_dbe",
            "row_remap_failure",
            "row_remap_pending",
            "pcie_replay_rate",
            "nvlink_error_rate",
            "nic_links_down",
        ]
    )
    """Anomaly kinds that count as a hardware signal when classifying a failed attempt: the
    hardware-class kinds that can break a job (slowdowns such as throttling cannot)."""
    infrastructure_anomaly_kinds: list[str] = field(
        default_factory=lambda: ["telemetry_gap", "condition_flap"]
    )
    """Anomaly kinds that count as missing evidence (class `infrastructure`, never `hardware`) when
    classifying a failed attempt: a gap in monitoring is not proof of broken hardware."""
    xid_catalogue: str = ""
    """CSV of XID codes and their class; empty means the bundled `queries/data/xid_catalogue.csv`."""


@dataclass(frozen=True, config=SECTION)
class StragglerSettings:
    median_ratio_threshold: Annotated[float, Field(ge=1)] = 1.02
    """A straggler's median step-time ratio to the step median exceeds this."""
    min_steps: PositiveInt = 20
    """Fewer steps than this: no verdict."""
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.01
    """Family-wise error rate of the one-sided Mann-Whitney U tests (Holm corrected)."""
    relative_score_threshold: Share = 0.75
    """nvidia-resiliency-ext flags a rank whose relative score is below this."""
    repeat_offender_jobs: PositiveInt = 2
    """A host that is a straggler host in this many jobs in a window is a repeat offender."""


@dataclass(frozen=True, config=SECTION)
class DetectionSettings:
    """Thresholds of the anomaly detectors (SPEC "Anomalies"); docs/detection.md explains each."""

    sample_interval_s: PositiveInt = 60
    """Expected scrape interval of DCGM and node samples."""
    counter_window_s: PositiveInt = 3600
    """Error-counter rates are increases over this trailing window (resets handled)."""
    ecc_sbe_per_window: PositiveFloat = 10.0
    """Single-bit ECC errors per window at which the rate is `rising` (healthy GPUs: ~0 a day)."""
    ecc_dbe_per_window: PositiveFloat = 1.0
    """Any double-bit ECC error is an anomaly."""
    pcie_replay_per_window: PositiveFloat = 100.0
    """PCIe replays per window: a marginal link retries far more than this."""
    nvlink_errors_per_window: PositiveFloat = 50.0
    """NVLink CRC/replay/recovery errors per window."""
    load_util_min: Annotated[float, Field(ge=0, le=100)] = 50.0
    """A GPU is `under load` (comparable with its peers) at or above this utilisation, %."""
    peer_min_count: Annotated[int, Field(ge=2)] = 4
    """Fewer loaded peers than this at an instant: no peer comparison."""
    peer_z: PositiveFloat = 3.5
    """Robust z-score (median/MAD) beyond which a GPU differs from its peers."""
    peer_min_rel_dev: NonNegativeFloat = 0.05
    """... and by at least this fraction of the peers' median (MAD of identical GPUs can be ~0)."""
    peer_temp_min_dev_c: NonNegativeFloat = 8.0
    """Temperature above peers: by at least this many degrees C."""
    peer_window_s: PositiveInt = 900
    """A peer deviation must hold in `peer_min_share` of the samples of this trailing window."""
    peer_min_share: Annotated[float, Field(gt=0, le=1)] = 0.8
    """Share of the window's samples that must deviate (a noisy but healthy GPU does not)."""
    peer_merge_gap_s: NonNegativeInt = 3600
    """Deviations less than this apart are one finding (a throttled GPU idles between jobs)."""
    nic_min_samples: PositiveInt = 3
    """Samples an episode of fewer NIC links than expected needs (a renegotiating link is not one)."""
    gap_s: PositiveInt = 300
    """A GPU silent this long while its node reports Ready is a telemetry gap."""
    flap_window_s: PositiveInt = 3600
    """Condition flapping: transitions counted over this trailing window ..."""
    flap_transitions: PositiveInt = 4
    """... at least this many transitions is flapping."""
    xid_clear_s: NonNegativeInt = 21600
    """A hardware-XID anomaly stays open this long after its last event (and longer while its node
    stays unavailable: a hardware finding is open while the outage it started lasts)."""
    escalate_xid_count: PositiveInt = 3
    """Escalation: the N-th critical hardware-XID finding on one GPU within `escalate_window_s`
    calls for `replace`."""
    escalate_window_s: PositiveInt = 2592000
    """Escalation look-back (30 days): earlier findings count even when long closed."""
    repeat_offender_action: Literal[
        "watch", "cordon", "drain", "reset_gpu", "reboot", "replace"
    ] = "cordon"
    """The ladder step (at least) for a repeat-offender straggler host."""
    straggler_peer_z: PositiveFloat = 3.5
    """A straggler's median ratio must also be an outlier (robust z) among its job's other ranks
    that are not slow over the same steps."""
    straggler_candidate_z: PositiveFloat = 2.5
    """Unused since stragglers are episodes; kept so existing config files still load."""
    straggler_min_mad: NonNegativeFloat = 0.005
    """Floor of the ranks' median-ratio MAD (identical ranks have MAD ~0)."""
    changepoint_min_segment: PositiveInt = 10
    """Change-point onset: the shortest segment (steps) on either side of the change."""
    episode_penalty: PositiveFloat = 8.0
    """Straggler episodes: change-point penalty per change, in noise variances x ln(logged steps)."""
    episode_screen_z: PositiveFloat = 5.0
    """Straggler episodes: a window of `changepoint_min_segment` steps this many standard errors
    slow makes a rank a candidate for segmentation."""
    episode_min_noise: PositiveFloat = 0.002
    """Straggler episodes: floor of a rank's per-step ratio noise (sd)."""
    stall_min_s: PositiveInt = 600
    """Stalled job: no step ended for at least this long (seconds) ..."""
    stall_step_multiple: PositiveFloat = 20.0
    """... and for at least this many times the attempt's median step time."""
    stall_util_min: Annotated[float, Field(ge=0, le=100)] = 90.0
    """Stalled job without step logs: every GPU at or above this utilisation (%) ..."""
    stall_power_max_w: PositiveFloat = 150.0
    """... while drawing at most this power (W; an idle H100/H200 draws ~70 W) ..."""
    stall_activity_max: Annotated[float, Field(ge=0, le=1)] = 0.05
    """... and its tensor-pipe activity (0-1, when reported) at most this ..."""
    stall_telemetry_min_s: PositiveInt = 600
    """... for at least this long (seconds)."""
    max_out_share: Share = 0.10
    """Policy: never cordon/drain more than this share of a cluster's nodes at once."""


@dataclass(frozen=True, config=SECTION)
class UtilisationSettings:
    idle_activity: Share = 0.05
    """An allocated GPU (or MIG instance) whose activity (graphics engine active, else
    DCGM_FI_DEV_GPU_UTIL / 100) is below this for a whole scrape window is idle then."""
    window_max_s: PositiveInt = 300
    """A sample stands for the time to the next sample of its GPU, at most this long (seconds):
    a longer gap is missing telemetry, neither busy nor idle."""
    packing_max_activity: Share = 0.5
    """MIG packing considers workloads whose p95 activity per GPU stays at or below this share."""
    packing_headroom: NonNegativeFloat = 0.2
    """A MIG profile fits when its compute share and memory exceed the workload's p95 activity
    and peak memory by this fraction."""
    mig_profiles: str = ""
    """CSV of MIG profiles per GPU model; empty: the bundled queries/data/mig_profiles.csv."""


@dataclasses.dataclass(frozen=True)
class Settings:
    availability: AvailabilitySettings = field(default_factory=AvailabilitySettings)
    failures: FailureSettings = field(default_factory=FailureSettings)
    stragglers: StragglerSettings = field(default_factory=StragglerSettings)
    detection: DetectionSettings = field(default_factory=DetectionSettings)
    utilisation: UtilisationSettings = field(default_factory=UtilisationSettings)
    prometheus_table: dict[str, Any] = field(default_factory=dict)
    """The `[prometheus]` table as written; validated when read, `prometheus` is its model
    (built on use, so only the Prometheus ingest imports its client)."""
    origins: dict[str, str] = field(default_factory=dict, compare=False)
    """Where each setting that is not a default came from: `section.key` -> file or variable."""

    @property
    def prometheus(self) -> PrometheusSettings:
        from pipelines.sources.prometheus import PrometheusSettings

        return PrometheusSettings.from_extra({"prometheus": self.prometheus_table})

    @property
    def extra(self) -> dict[str, Any]:
        """The sections other modules own, as `PrometheusSettings.from_extra` reads them."""
        return {"prometheus": self.prometheus_table}

    def sql_params(self) -> dict[str, Any]:
        """The flat named parameters the SQL files may use."""
        a, f, s, u = self.availability, self.failures, self.stragglers, self.utilisation
        detection = {f"det_{k}": v for k, v in dataclasses.asdict(self.detection).items()}
        return detection | {
            "staleness_s": a.staleness_s,
            "require_gpu_telemetry": a.require_gpu_telemetry,
            "required_conditions": list(a.required_conditions),
            "good_when_true_suffixes": list(a.good_when_true_suffixes),
            "failure_before_s": f.before_end_s,
            "failure_after_s": f.after_end_s,
            "crash_loop_min_failures": f.crash_loop_min_failures,
            "hardware_anomaly_kinds": list(f.hardware_anomaly_kinds),
            "infrastructure_anomaly_kinds": list(f.infrastructure_anomaly_kinds),
            "xid_catalogue_path": f.xid_catalogue
            or str(queries_dir() / "data" / "xid_catalogue.csv"),
            "straggler_ratio": s.median_ratio_threshold,
            "straggler_min_steps": s.min_steps,
            "straggler_alpha": s.alpha,
            "relative_score_threshold": s.relative_score_threshold,
            "repeat_offender_jobs": s.repeat_offender_jobs,
            "util_idle_activity": u.idle_activity,
            "util_window_max_s": u.window_max_s,
            "util_packing_max_activity": u.packing_max_activity,
            "util_packing_headroom": u.packing_headroom,
            "mig_profiles_path": u.mig_profiles or str(queries_dir() / "data" / "mig_profiles.csv"),
        }


_SECTIONS: dict[str, type] = {
    "availability": AvailabilitySettings,
    "failures": FailureSettings,
    "stragglers": StragglerSettings,
    "detection": DetectionSettings,
    "utilisation": UtilisationSettings,
}
SECTION_NAMES = (*_SECTIONS, "prometheus")

ENV_PREFIX = "GPUFLEET_"
"""`GPUFLEET_<SECTION>__<KEY>` overrides one setting, e.g. `GPUFLEET_AVAILABILITY__STALENESS_S=600`."""


def _env_value(text: str) -> Any:
    """A TOML value (`600`, `["Ready"]`, `true`); anything else is a string as written."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def _env_overrides(environ: dict[str, str]) -> dict[str, dict[str, tuple[str, Any]]]:
    """`section -> key -> (variable, value)` from the `GPUFLEET_<SECTION>__<KEY>` variables."""
    overrides: dict[str, dict[str, tuple[str, Any]]] = {}
    for variable, text in sorted(environ.items()):
        if not variable.startswith(ENV_PREFIX) or "__" not in variable:
            continue
        section, _, key = variable[len(ENV_PREFIX) :].partition("__")
        section, key = section.lower(), key.lower()
        if section not in SECTION_NAMES or not key:
            raise ConfigError(
                f"environment {variable}: unknown section `{section}`; known: {', '.join(SECTION_NAMES)}.",
                "Name a setting as GPUFLEET_<SECTION>__<KEY>, e.g. GPUFLEET_AVAILABILITY__STALENESS_S.",
            )
        overrides.setdefault(section, {})[key] = (variable, _env_value(text))
    return overrides


def config_file(path: str | os.PathLike[str] | None = None) -> tuple[Path, str]:
    """The settings file and what named it: `--config`, `GPUFLEET_CONFIG` or the default."""
    if path:
        return Path(path), "--config"
    if os.environ.get("GPUFLEET_CONFIG"):
        return Path(os.environ["GPUFLEET_CONFIG"]), "environment GPUFLEET_CONFIG"
    return Path(DEFAULT_CONFIG), "default"


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Read settings from `path`, `$GPUFLEET_CONFIG` or `./gpufleet.toml`, then the
    `GPUFLEET_<SECTION>__<KEY>` environment variables.

    A missing default file means defaults; a missing file named explicitly is an error.
    Unknown sections and keys, wrong types and out-of-range values are refused, one line each.
    """
    config_path, named_by = config_file(path)
    raw: dict[str, Any] = {}
    if config_path.is_file():
        try:
            raw = tomllib.loads(config_path.read_text())
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{config_path}: not valid TOML: {e}") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{config_path}: cannot read the settings file: {e}") from None
    elif named_by != "default" or config_path.exists():
        raise ConfigError(
            f"Config file `{config_path}` does not exist or is not a file.",
            "Pass an existing file with --config, or omit it to use the defaults.",
        )
    unknown = [name for name in raw if name not in SECTION_NAMES]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], SECTION_NAMES, n=1)
        guess = (
            f"did you mean [{close[0]}]?"
            if close
            else f"known sections: {', '.join(SECTION_NAMES)}."
        )
        what = "section" if isinstance(raw[unknown[0]], dict) else "top-level key"
        raise ConfigError(
            f"{config_path}: unknown {what} `{unknown[0]}`; {guess}",
            "Every setting belongs in one of the sections docs/operations.md lists.",
        )
    overrides = _env_overrides(dict(os.environ))
    sections: dict[str, Any] = {}
    origins: dict[str, str] = {}
    errors: list[ConfigError] = []
    for name in SECTION_NAMES:
        values = raw.get(name, {})
        if isinstance(values, dict):
            origins |= {f"{name}.{key}": f"file {config_path}" for key in values}
            values = dict(values)
        section_origins: dict[str, str] = {}
        for key, (variable, value) in overrides.get(name, {}).items():
            if isinstance(values, dict):
                values[key] = value
            section_origins[key] = origins[f"{name}.{key}"] = f"environment {variable}"
        try:
            if name == "prometheus":
                from pipelines.sources.prometheus import PrometheusSettings

                if values:
                    PrometheusSettings.from_extra(
                        {"prometheus": values}, origin=str(config_path), origins=section_origins
                    )
                sections["prometheus_table"] = values
            else:
                sections[name] = build_section(
                    _SECTIONS[name], name, values, str(config_path), section_origins
                )
        except ConfigError as e:
            errors.append(e)
    if errors:
        # Every invalid setting of every section at once, one line each.
        raise ConfigError("\n".join(e.title for e in errors), errors[0].hint)
    return Settings(**sections, origins=origins)


def db_path(explicit: str | None = None) -> Path:
    """The database path: `--db`, else `$GPUFLEET_DB`, else `fleet.duckdb`."""
    return Path(explicit or os.environ.get("GPUFLEET_DB") or DEFAULT_DB)
