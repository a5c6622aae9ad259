"""Settings: every type and range checked, unknown names refused, one line per error; `gpufleet config`."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import pytest
from pydantic.dataclasses import is_pydantic_dataclass

from pipelines.config import (
    AvailabilitySettings,
    DetectionSettings,
    FailureSettings,
    StragglerSettings,
    UtilisationSettings,
    load_settings,
)
from pipelines.errors import ConfigError
from pipelines.settings_model import toml_value
from pipelines.sources.prometheus import PrometheusSettings
from testkit.cli import run_gpufleet

SECTIONS = {
    "availability": AvailabilitySettings,
    "failures": FailureSettings,
    "stragglers": StragglerSettings,
    "detection": DetectionSettings,
    "utilisation": UtilisationSettings,
    "prometheus": PrometheusSettings,
}


def _base(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return get_origin(annotation) or annotation


# A value of the wrong type for each declared type; a list gets a string, the mistake that used to be
# read as a list of its characters (`required_conditions = "Ready"` -> R, e, a, d, y).
WRONG = {list: "Ready", dict: "Ready", int: "5", float: "fast", bool: 1, str: 5, Literal: 5}
EXPECTED = {
    list: "a list of",
    dict: "a table of",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    str: "a string",
    Literal: "one of",
}


def _declared(cls: type, name: str) -> Any:
    """The type a settings section's field declares, without its constraints."""
    assert is_pydantic_dataclass(cls), cls
    return _base(cls.__pydantic_fields__[name].annotation)


EVERY_SETTING = [
    (section, f.name, _declared(cls, f.name))
    for section, cls in SECTIONS.items()
    for f in dataclasses.fields(cls)
]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gpufleet.toml"
    path.write_text(text)
    return path


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    return caught.value.title


@pytest.mark.parametrize(
    ("section", "key", "kind"), EVERY_SETTING, ids=[f"{s}.{k}" for s, k, _ in EVERY_SETTING]
)
def test_every_setting_with_a_wrong_type_is_one_line_naming_file_key_type_and_value(
    tmp_path, monkeypatch, section, key, kind
):
    monkeypatch.delenv("GPUFLEET_CONFIG", raising=False)
    wrong = WRONG[kind]
    path = _write(tmp_path, f"[{section}]\n{key} = {toml_value(wrong)}\n")
    title = _error(path)
    assert "\n" not in title
    assert title.startswith(f"{path}: `{section}.{key}` must be {EXPECTED[kind]}")
    assert title.endswith(f"got {toml_value(wrong)}.")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # crash_loop_min_failures = -5 flagged every job as crash-looping.
        (
            "[failures]\ncrash_loop_min_failures = -5",
            "`failures.crash_loop_min_failures` must be an integer > 0, got -5.",
        ),
        (
            "[availability]\nstaleness_s = 0",
            "`availability.staleness_s` must be an integer > 0, got 0.",
        ),
        ("[stragglers]\nalpha = 1.5", "`stragglers.alpha` must be a number > 0 and < 1, got 1.5."),
        (
            "[detection]\nmax_out_share = 2",
            "`detection.max_out_share` must be a number >= 0 and <= 1, got 2.",
        ),
        (
            '[detection]\nrepeat_offender_action = "bogus"',
            (
                '`detection.repeat_offender_action` must be one of "watch", "cordon", "drain", "reset_gpu", '
                '"reboot", "replace", got "bogus".'
            ),
        ),
        (
            "[detection]\nload_util_min = 101.0",
            "`detection.load_util_min` must be a number >= 0 and <= 100, got 101.0.",
        ),
        ("[prometheus]\nretries = -1", "`prometheus.retries` must be an integer >= 0, got -1."),
        (
            "[prometheus]\nnic_expected_by_instance_type = { p5 = -32 }",
            (
                "`prometheus.nic_expected_by_instance_type` must be a table of integers >= 0; "
                "`prometheus.nic_expected_by_instance_type.p5`, got -32."
            ),
        ),
        (
            '[availability]\nrequired_conditions = ["Ready", 5]',
            (
                "`availability.required_conditions` must be a list of strings; "
                "`availability.required_conditions[1]`, got 5."
            ),
        ),
        (
            '[prometheus]\nnode_metrics = { nic = { sample_sql = "value" } }',
            "`prometheus.node_metrics`: `nic` needs a `selector` or a `promql` key",
        ),
    ],
)
def test_out_of_range_values_are_refused(tmp_path, line, message):
    path = _write(tmp_path, line + "\n")
    title = _error(path)
    assert title.startswith(f"{path}: {message}")
    assert "\n" not in title


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[availabilty]\nstaleness_s = 600",
            "unknown section `availabilty`; did you mean [availability]?",
        ),
        (
            "staleness_s = 600",
            "unknown top-level key `staleness_s`; known sections: availability, failures,",
        ),
        (
            "[detection]\npeer_zscore = 3.0",
            "unknown setting `detection.peer_zscore` = 3.0; did you mean `peer_z`?",
        ),
        (
            "[prometheus]\nchunk_seconds = 60",
            "unknown setting `prometheus.chunk_seconds` = 60; did you mean `chunk_s`?",
        ),
        ("availability = 5", "`availability` must be a [availability] table, got 5."),
    ],
)
def test_unknown_names_are_refused(tmp_path, text, message):
    path = _write(tmp_path, text + "\n")
    assert _error(path).startswith(f"{path}: {message}")


def test_every_invalid_setting_is_reported_at_once_one_line_each(tmp_path):
    path = _write(
        tmp_path,
        '[availability]\nrequired_conditions = "Ready"\n'
        "[failures]\ncrash_loop_min_failures = -5\n"
        '[prometheus]\ngpu_metrics = "DCGM_FI_DEV_GPU_TEMP"\n',
    )
    assert _error(path).splitlines() == [
        f'{path}: `availability.required_conditions` must be a list of strings, got "Ready".',
        f"{path}: `failures.crash_loop_min_failures` must be an integer > 0, got -5.",
        f'{path}: `prometheus.gpu_metrics` must be a list of strings, got "DCGM_FI_DEV_GPU_TEMP".',
    ]


def test_environment_overrides_a_setting_and_is_checked_like_the_file(tmp_path, monkeypatch):
    path = _write(tmp_path, "[availability]\nstaleness_s = 600\n")
    monkeypatch.setenv("GPUFLEET_AVAILABILITY__REQUIRED_CONDITIONS", '["Ready"]')
    monkeypatch.setenv("GPUFLEET_PROMETHEUS__CLUSTER", "prod")  # not TOML: the string as written
    settings = load_settings(path)
    assert settings.availability.required_conditions == ["Ready"]
    assert settings.availability.staleness_s == 600
    assert settings.prometheus.cluster == "prod"
    monkeypatch.setenv("GPUFLEET_AVAILABILITY__STALENESS_S", "-1")
    assert _error(path) == (
        "environment GPUFLEET_AVAILABILITY__STALENESS_S: "
        "`availability.staleness_s` must be an integer > 0, got -1."
    )
    monkeypatch.setenv("GPUFLEET_AVAILABILTY__STALENESS_S", "60")
    with pytest.raises(
        ConfigError, match="GPUFLEET_AVAILABILTY__STALENESS_S: unknown section `availabilty`"
    ):
        load_settings(path)


NARROW = {"COLUMNS": "60"}
"""A narrow terminal: messages must not wrap in it."""


def test_cli_refuses_a_wrong_setting_with_one_line_per_error_and_exit_2(tmp_path):
    _write(
        tmp_path,
        '[availability]\nrequired_conditions = "Ready"\n[failures]\ncrash_loop_min_failures = -5\n',
    )
    result = run_gpufleet(tmp_path, "config", env=NARROW)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    # COLUMNS=60: a long message stays one line in a log however narrow the terminal.
    assert result.stderr.splitlines()[:2] == [
        'Error: gpufleet.toml: `availability.required_conditions` must be a list of strings, got "Ready".',
        "gpufleet.toml: `failures.crash_loop_min_failures` must be an integer > 0, got -5.",
    ]


def test_cli_config_prints_the_effective_settings_and_where_each_came_from(tmp_path):
    _write(tmp_path, '[stragglers]\nalpha = 0.05\n[prometheus]\ncluster = "prod"\n')
    result = run_gpufleet(
        tmp_path,
        "config",
        env=NARROW
        | {
            "GPUFLEET_FAILURES__CRASH_LOOP_MIN_FAILURES": "4",
            "GPUFLEET_PROM_TOKEN": "SECRET-never-shown",
        },
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "alpha = 0.05  # file gpufleet.toml" in lines
    assert 'cluster = "prod"  # file gpufleet.toml' in lines
    assert (
        "crash_loop_min_failures = 4  # environment GPUFLEET_FAILURES__CRASH_LOOP_MIN_FAILURES"
        in lines
    )
    assert "staleness_s = 300  # default" in lines
    assert "# prometheus credentials: GPUFLEET_PROM_TOKEN (values never shown)" in lines
    assert "SECRET" not in result.stdout
    # The output is a settings file: read back, it is the effective settings.
    printed = tomllib.loads(result.stdout)
    assert printed["failures"]["crash_loop_min_failures"] == 4
    assert set(printed) == set(SECTIONS)
    for section, cls in SECTIONS.items():
        assert set(printed[section]) == {f.name for f in dataclasses.fields(cls)}
