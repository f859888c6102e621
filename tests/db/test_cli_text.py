"""CLI arguments go through app.core.text_rules: names with controls or bidi overrides are one-line
errors naming the option and the code point (argv cannot carry NUL; the OS refuses it)."""

from __future__ import annotations

import json

from tests.db.test_cli import cairn, one_line_error


def test_cli_refuses_control_and_bidi_characters_in_names_and_paths(tmp_path):
    data = tmp_path / "data"
    doc = tmp_path / "note.txt"
    doc.write_text("Mount Etna is an active stratovolcano.", encoding="utf-8")
    msg = one_line_error(cairn("members", "add", "eve\u202egnp.exe", "--role", "owner", data_dir=data))
    assert "name contains the bidirectional control character U+202E at offset 3" in msg
    owner = json.loads(cairn("members", "add", "山田 太郎", "--role", "owner", data_dir=data).stdout)
    assert owner["role"] == "owner" and owner["memberId"]
    msg = one_line_error(
        cairn("credentials", "create", "--creator", owner["memberId"], "--name", "bot\x1b[31m", data_dir=data)
    )
    assert "input.name contains the control character U+001B at offset 3" in msg
    msg = one_line_error(cairn("ingest", str(doc), "--collection", "two\nlines", "--lexical-only", data_dir=data))
    assert "--collection contains the control character U+000A at offset 3" in msg
    msg = one_line_error(
        cairn("ingest", str(tmp_path / "bad\x1bname.txt"), "--collection", "c", "--lexical-only", data_dir=data)
    )
    assert "path contains the control character U+001B" in msg
    ok = json.loads(cairn("ingest", str(doc), "--collection", "資料 📚", "--lexical-only", data_dir=data).stdout)
    assert ok["created"] == 1
