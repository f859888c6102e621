"""docs/configuration.md's settings table is the generator's output for the current ``Settings``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import Field
from pydantic_settings import BaseSettings

from cairn.app.cli.settings_doc import BEGIN, END, main, settings_table, with_table
from cairn.app.core.config import Settings

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "configuration.md"


def test_the_committed_settings_table_is_the_generated_one():
    committed = DOC.read_text(encoding="utf-8")
    assert with_table(document=committed, table=settings_table()) == committed, (
        "docs/configuration.md is stale: run `python -m cairn.app.cli.settings_doc --write`"
    )


def test_every_setting_has_one_row_with_its_variable_default_and_description():
    table = settings_table()
    rows = re.findall(r"^\| `CAIRN_([A-Z0-9_]+)` \| (.+?) \| (.+?) \| (.+) \|$", table, flags=re.M)
    assert [name.lower() for name, *_ in rows] == list(Settings.model_fields)
    by_name = {name.lower(): (kind, default, meaning) for name, kind, default, meaning in rows}
    assert by_name["chunk_max_tokens"][:2] == ("an integer >= 32 and <= 2000", "`200`")
    assert by_name["vector_backend"][:2] == ("one of `auto`, `edge`, `local`, `server`", "`auto`")
    assert by_name["index_poll_seconds"][1] == "`1`"  # 1.0 written as the environment would take it
    assert by_name["metrics"][:2] == ("true or false", "`false`")
    assert by_name["database_url"][1] == "none" and by_name["cors_origins"][1] == "empty"
    assert by_name["data_dir"][1] == "`./cairn-data`"
    for name, info in Settings.model_fields.items():
        assert by_name[name][2] == " ".join((info.description or "").split()).replace("|", "\\|"), name


def test_a_setting_without_a_description_is_refused():
    class Bare(BaseSettings):
        described: int = Field(default=1, description="Has one.")
        bare: int = 2

    with pytest.raises(ValueError, match="without a description: bare"):
        settings_table(fields=Bare.model_fields)


def test_with_table_replaces_only_what_lies_between_the_markers():
    doc = f"# Title\n\nbefore\n{BEGIN}\nold row\n{END}\nafter\n"
    assert with_table(document=doc, table="| new |\n") == f"# Title\n\nbefore\n{BEGIN}\n| new |\n{END}\nafter\n"
    with pytest.raises(ValueError, match="marker lines"):
        with_table(document="no markers\n", table="| new |\n")


def test_check_and_write_modes(tmp_path, capsys):
    doc = tmp_path / "configuration.md"
    doc.write_text(f"intro\n{BEGIN}\nstale\n{END}\n", encoding="utf-8")
    assert main(["--check", "--doc", str(doc)]) == 1
    assert "is stale" in capsys.readouterr().err
    assert main(["--write", "--doc", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8") == f"intro\n{BEGIN}\n{settings_table()}{END}\n"
    assert main(["--check", "--doc", str(doc)]) == 0
