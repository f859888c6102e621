"""``cairn sets import FILE.yaml`` as an operator runs it (subprocess on a temp data dir)."""

from __future__ import annotations

import json

from tests.db.test_cli import cairn, one_line_error

SETS = """
sets:
  - name: Rocks
    description: Approved rock facts
    scope: {collections: [rocks]}
    definitions:
      - {term: basalt, definition: A volcanic rock formed from lava., aliases: [basaltic rock]}
    verifiedAnswers:
      - question: What is granite?
        answer: An igneous rock.
        citation: {document: {collection: rocks, externalId: one.txt}}
    instructions: [Name the rock type.]
    requiredEvidence: [{document: {collection: rocks, externalId: two.md}}]
"""


def test_sets_import_creates_updates_and_refuses_in_one_line(tmp_path):
    data, docs = tmp_path / "data", tmp_path / "docs"
    docs.mkdir()
    (docs / "one.txt").write_text("Granite is an igneous rock.")
    (docs / "two.md").write_text("# Basalt\n\nBasalt forms from lava.")
    assert cairn("ingest", str(docs), "--collection", "rocks", "--lexical-only", data_dir=data).returncode == 0
    assert cairn("members", "add", "olga", "--role", "owner", data_dir=data).returncode == 0
    assert cairn("members", "add", "vic", "--role", "viewer", data_dir=data).returncode == 0
    f = tmp_path / "sets.yaml"
    f.write_text(SETS)
    r = cairn("sets", "import", str(f), data_dir=data)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert (row["status"], row["version"], row["name"]) == ("created", 1, "Rocks")
    assert row["entries"] == {"VERIFIED_ANSWER": 1, "DEFINITION": 1, "INSTRUCTION": 1, "REQUIRED_EVIDENCE": 1}
    again = json.loads(cairn("sets", "import", str(f), data_dir=data).stdout)
    assert (again["status"], again["version"]) == ("unchanged", 1)
    f.write_text(SETS.replace("Name the rock type.", "Name the rock type and its origin."))
    changed = json.loads(cairn("sets", "import", str(f), "--member", "olga", data_dir=data).stdout)
    assert (changed["status"], changed["version"], changed["contextSetId"]) == ("updated", 2, row["contextSetId"])
    assert "are curated by editors" in one_line_error(cairn("sets", "import", str(f), "--member", "vic", data_dir=data))
    f.write_text(SETS.replace("instructions:", "instructons:"))
    assert "unknown keys ['instructons']" in one_line_error(cairn("sets", "import", str(f), data_dir=data))
    f.write_text(SETS.replace("externalId: two.md", "externalId: three.md"))
    assert "no live document 'three.md'" in one_line_error(cairn("sets", "import", str(f), data_dir=data))
