"""docs/reference/ is what `python -m pipelines.docgen` generates from the code, to the letter."""

from __future__ import annotations

import pytest

from pipelines import docgen


@pytest.mark.parametrize("path", sorted(docgen.generated()), ids=lambda p: p.name)
def test_reference_doc_matches_the_code(path):
    text = docgen.generated()[path]
    assert path.is_file(), f"{path} is missing: run `python -m pipelines.docgen`"
    assert path.read_text() == text, f"{path.name} is out of date: run `python -m pipelines.docgen`"


def test_every_command_and_setting_is_in_the_reference():
    cli, settings = docgen.cli_reference(), docgen.settings_reference()
    for command in (
        "gpufleet ingest prometheus",
        "gpufleet compute",
        "gpufleet export",
        "gpufleet config",
    ):
        assert f"## `{command}`" in cli
    for setting in (
        "`staleness_s`",
        "`chunk_s`",
        "GPUFLEET_PROMETHEUS__CHUNK_S",
        "GPUFLEET_DETECTION__",
    ):
        assert setting in settings


def test_check_reports_a_stale_doc(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(docgen, "DOCS", tmp_path / "docs" / "reference")
    assert docgen.main(["--check"]) == 1  # nothing written yet
    assert docgen.main([]) == 0
    assert docgen.main(["--check"]) == 0
    (tmp_path / "docs" / "reference" / "settings.md").write_text("hand-edited\n")
    assert docgen.main(["--check"]) == 1
    assert "docs/reference/settings.md is out of date" in capsys.readouterr().out
