"""Settings from `gpufleet.toml`, with documented defaults.

Every threshold an SRE may want to tune lives here, not in SQL or code:
the SQL reads them as named parameters (`$staleness_s`, ...).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.errors import ConfigError
from pipelines.sql import queries_dir

DEFAULT_DB = "fleet.duckdb"
DEFAULT_CONFIG = "gpufleet.toml"


@dataclass(frozen=True)
class AvailabilitySettings:
    staleness_s: int = 300
    """A condition or GPU without a sample this many seconds old is `unknown`."""
    require_gpu_telemetry: bool = True
    """A GPU with no fresh DCGM sample makes its node `unknown` (fail closed)."""
    required_conditions: list[str] = field(default_factory=list)
    """Conditions that count; empty means every condition seen for a node."""
    good_when_true_suffixes: list[str] = field(default_factory=lambda: ["Ready", "Healthy"])
    """Conditions named so (or exactly so) are good when `True`; all others when `False`."""

    def __post_init__(self) -> None:
        if not isinstance(self.staleness_s, int) or self.staleness_s <= 0:
            raise ConfigError(
                f"`availability.staleness_s` must be a positive number of seconds, not `{self.staleness_s}`.",
                "Set it to at least the scrape interval, e.g. staleness_s = 300.",
            )


@dataclass(frozen=True)
class FailureSettings:
    before_end_s: int = 600
    """Hardware signals this many seconds before an attempt ended implicate it."""
    after_end_s: int = 300
    """... and this many seconds after."""
    crash_loop_min_failures: int = 3
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
    infrastructure_anomaly_kinds: list[str] = field(default_factory=lambda: ["telemetry_gap", "condition_flap"])
    """Anomaly kinds that count as missing evidence (class `infrastructure`, never `hardware`) when
    classifying a failed attempt: a gap in monitoring is not proof of broken hardware."""
    xid_catalogue: str = ""
    """CSV of XID codes and their class; empty means the bundled `queries/data/xid_catalogue.csv`."""


@dataclass(frozen=True)
class StragglerSettings:
    median_ratio_threshold: float = 1.02
    """A straggler's median step-time ratio to the step median exceeds this."""
    min_steps: int = 20
    """Fewer steps than this: no verdict."""
    alpha: float = 0.01
    """Family-wise error rate of the one-sided Mann-Whitney U tests (Holm corrected)."""
    relative_score_threshold: float = 0.75
    """nvidia-resiliency-ext flags a rank whose relative score is below this."""
    repeat_offender_jobs: int = 2
    """A host that is a straggler host in this many jobs in a window is a repeat offender."""


@dataclass(frozen=True)
class DetectionSettings:
    """Thresholds of the anomaly detectors (SPEC "Anomalies"); docs/detection.md explains each."""

    sample_interval_s: int = 60
    """Expected scrape interval of DCGM and node samples."""
    counter_window_s: int = 3600
    """Error-counter rates are increases over this trailing window (resets handled)."""
    ecc_sbe_per_window: float = 10.0
    """Single-bit ECC errors per window at which the rate is `rising` (healthy GPUs: ~0 a day)."""
    ecc_dbe_per_window: float = 1.0
    """Any double-bit ECC error is an anomaly."""
    pcie_replay_per_window: float = 100.0
    """PCIe replays per window: a marginal link retries far more than this."""
    nvlink_errors_per_window: float = 50.0
    """NVLink CRC/replay/recovery errors per window."""
    load_util_min: float = 50.0
    """A GPU is `under load` (comparable with its peers) at or above this utilisation, %."""
    peer_min_count: int = 4
    """Fewer loaded peers than this at an instant: no peer comparison."""
    peer_z: float = 3.5
    """Robust z-score (median/MAD) beyond which a GPU differs from its peers."""
    peer_min_rel_dev: float = 0.05
    """... and by at least this fraction of the peers' median (MAD of identical GPUs can be ~0)."""
    peer_temp_min_dev_c: float = 8.0
    """Temperature above peers: by at least this many degrees C."""
    peer_window_s: int = 900
    """A peer deviation must hold in `peer_min_share` of the samples of this trailing window."""
    peer_min_share: float = 0.8
    """Share of the window's samples that must deviate (a noisy but healthy GPU does not)."""
    peer_merge_gap_s: int = 3600
    """Deviations less than this apart are one finding (a throttled GPU idles between jobs)."""
    nic_min_samples: int = 3
    """Samples an episode of fewer NIC links than expected needs (a renegotiating link is not one)."""
    gap_s: int = 300
    """A GPU silent this long while its node reports Ready is a telemetry gap."""
    flap_window_s: int = 3600
    """Condition flapping: transitions counted over this trailing window ..."""
    flap_transitions: int = 4
    """... at least this many transitions is flapping."""
    xid_clear_s: int = 21600
    """A hardware-XID anomaly stays open this long after its last event (and longer while its node
    stays unavailable: a hardware finding is open while the outage it started lasts)."""
    escalate_xid_count: int = 3
    """Escalation: the N-th critical hardware-XID finding on one GPU within `escalate_window_s`
    calls for `replace`."""
    escalate_window_s: int = 2592000
    """Escalation look-back (30 days): earlier findings count even when long closed."""
    repeat_offender_action: str = "cordon"
    """The ladder step (at least) for a repeat-offender straggler host."""
    straggler_peer_z: float = 3.5
    """A straggler's median ratio must also be an outlier (robust z) among its job's other ranks
    that are not slow over the same steps."""
    straggler_candidate_z: float = 2.5
    """Unused since stragglers are episodes; kept so existing config files still load."""
    straggler_min_mad: float = 0.005
    """Floor of the ranks' median-ratio MAD (identical ranks have MAD ~0)."""
    changepoint_min_segment: int = 10
    """Change-point onset: the shortest segment (steps) on either side of the change."""
    episode_penalty: float = 8.0
    """Straggler episodes: change-point penalty per change, in noise variances x ln(logged steps)."""
    episode_screen_z: float = 5.0
    """Straggler episodes: a window of `changepoint_min_segment` steps this many standard errors
    slow makes a rank a candidate for segmentation."""
    episode_min_noise: float = 0.002
    """Straggler episodes: floor of a rank's per-step ratio noise (sd)."""
    stall_min_s: int = 600
    """Stalled job: no step ended for at least this long (seconds) ..."""
    stall_step_multiple: float = 20.0
    """... and for at least this many times the attempt's median step time."""
    stall_util_min: float = 90.0
    """Stalled job without step logs: every GPU at or above this utilisation (%) ..."""
    stall_power_max_w: float = 150.0
    """... while drawing at most this power (W; an idle H100/H200 draws ~70 W) ..."""
    stall_activity_max: float = 0.05
    """... and its tensor-pipe activity (0-1, when reported) at most this ..."""
    stall_telemetry_min_s: int = 600
    """... for at least this long (seconds)."""
    max_out_share: float = 0.10
    """Policy: never cordon/drain more than this share of a cluster's nodes at once."""


@dataclass(frozen=True)
class Settings:
    availability: AvailabilitySettings = field(default_factory=AvailabilitySettings)
    failures: FailureSettings = field(default_factory=FailureSettings)
    stragglers: StragglerSettings = field(default_factory=StragglerSettings)
    detection: DetectionSettings = field(default_factory=DetectionSettings)
    extra: dict[str, Any] = field(default_factory=dict)
    """Sections other modules own (e.g. `prometheus`), passed through."""

    def sql_params(self) -> dict[str, Any]:
        """The flat named parameters the SQL files may use."""
        a, f, s = self.availability, self.failures, self.stragglers
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
            "xid_catalogue_path": f.xid_catalogue or str(queries_dir() / "data" / "xid_catalogue.csv"),
            "straggler_ratio": s.median_ratio_threshold,
            "straggler_min_steps": s.min_steps,
            "straggler_alpha": s.alpha,
            "relative_score_threshold": s.relative_score_threshold,
            "repeat_offender_jobs": s.repeat_offender_jobs,
        }


_SECTIONS = {
    "availability": AvailabilitySettings,
    "failures": FailureSettings,
    "stragglers": StragglerSettings,
    "detection": DetectionSettings,
}


def _build(cls: type, section: str, values: dict[str, Any], path: Path) -> Any:
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting `{section}.{unknown[0]}`.",
            f"Known settings in [{section}]: {', '.join(sorted(known))}.",
        )
    try:
        return cls(**values)
    except TypeError as e:
        raise ConfigError(f"{path}: invalid [{section}] section: {e}") from e


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Read settings from `path`, `$GPUFLEET_CONFIG` or `./gpufleet.toml`.

    A missing default file means defaults; a missing file named explicitly is an error.
    """
    explicit = path or os.environ.get("GPUFLEET_CONFIG")
    config_path = Path(explicit or DEFAULT_CONFIG)
    if not config_path.exists():
        if explicit:
            raise ConfigError(
                f"Config file `{config_path}` does not exist.",
                "Pass an existing file with --config, or omit it to use the defaults.",
            )
        return Settings()
    try:
        raw = tomllib.loads(config_path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{config_path}: not valid TOML: {e}") from e
    sections = {
        name: _build(cls, name, raw.pop(name, {}), config_path) for name, cls in _SECTIONS.items()
    }
    return Settings(**sections, extra=raw)


def db_path(explicit: str | None = None) -> Path:
    """The database path: `--db`, else `$GPUFLEET_DB`, else `fleet.duckdb`."""
    return Path(explicit or os.environ.get("GPUFLEET_DB") or DEFAULT_DB)
