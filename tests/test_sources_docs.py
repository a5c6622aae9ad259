"""docs/sources.md documents every ingest command and every [prometheus] setting."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from pipelines.cli import ingest_app
from pipelines.sources.prometheus import PrometheusSettings

DOC = (Path(__file__).resolve().parent.parent / "docs" / "sources.md").read_text()
TOML_EXAMPLES = re.findall(r"```toml\n(.*?)```", DOC, re.DOTALL)


def _ingest_commands() -> list[str]:
    """The names `gpufleet ingest`'s commands are registered under (each is given one)."""
    names = []
    for command in ingest_app.registered_commands:
        assert command.name is not None, command.callback
        names.append(command.name)
    return sorted(names)


@pytest.mark.parametrize("command", _ingest_commands())
def test_every_ingest_command_is_documented(command):
    assert f"gpufleet ingest {command}" in DOC


@pytest.mark.parametrize("setting", [f.name for f in dataclasses.fields(PrometheusSettings)])
def test_every_prometheus_setting_is_documented(setting):
    assert f"{setting} =" in DOC or f"`{setting}`" in DOC


@pytest.mark.parametrize(
    "example", TOML_EXAMPLES, ids=[f"toml-{i}" for i in range(len(TOML_EXAMPLES))]
)
def test_every_toml_example_is_a_valid_prometheus_config(example):
    PrometheusSettings.from_extra(tomllib.loads(example))


SETTINGS_BLOCK = (
    DOC.split("### Settings (`[prometheus]` in gpufleet.toml)")[1]
    .split("```toml\n")[1]
    .split("```")[0]
)
ABBREVIATED = {"gpu_metrics", "node_metrics"}  # the block says so; the full lists are in the code


@pytest.mark.parametrize(
    "key", sorted(set(tomllib.loads(SETTINGS_BLOCK)["prometheus"]) - ABBREVIATED)
)
def test_the_settings_block_shows_the_defaults(key):
    # An example value written as if it were the default (a fleet whose nodes are not p5 would get
    # wrong link counts) belongs in the comment.
    documented = tomllib.loads(SETTINGS_BLOCK)["prometheus"][key]
    assert documented == getattr(PrometheusSettings(), key)
