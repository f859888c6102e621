"""`cairn fields`: define from YAML, extraction on ingest (a .docx among the files), list, query
the Delaware question, suggestions; bad YAML refused with one line."""

from __future__ import annotations

import json

from tests.db.test_cli import cairn, one_line_error
from tests.db.test_fields import NDAS
from tests.db.test_ingest_binary import tiny_docx

YAML = """fields:
  - {name: effective_date, type: DATE, description: the date the agreement is effective}
  - {name: jurisdiction, type: text, description: the state whose laws govern the agreement}
  - {name: party, type: TEXT, multiplicity: many, description: a party to the agreement}
  - {name: term, type: DURATION, description: how long the agreement lasts}
"""


def test_fields_cli(tmp_path):
    docs, data = tmp_path / "ndas", tmp_path / "data"
    docs.mkdir()
    for name, text in NDAS.items():
        if name == "gamma.txt":
            (docs / "gamma.docx").write_bytes(tiny_docx(text.split("\n\n")))
        else:
            (docs / name).write_text(text)
    r = cairn("ingest", str(docs), "-c", "ndas", "--lexical-only", data_dir=data)
    assert r.returncode == 0, r.stderr
    (tmp_path / "f.yaml").write_text(YAML)
    r = cairn("fields", "define", str(tmp_path / "f.yaml"), "-c", "ndas", data_dir=data)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fields"] == ["effective_date", "jurisdiction", "party", "term"]
    r = cairn("fields", "extract", "-c", "ndas", data_dir=data)
    assert r.returncode == 0 and json.loads(r.stdout)["documents"] == 3, r.stderr
    listed = [json.loads(line) for line in cairn("fields", "list", "-c", "ndas", data_dir=data).stdout.splitlines()]
    assert {f["name"]: f["withValue"] for f in listed}["jurisdiction"] == 3
    (tmp_path / "plan.json").write_text(
        json.dumps(
            {
                "fields": ["party", "jurisdiction", "term"],
                "filters": [
                    {"field": "jurisdiction", "op": "EQ", "value": "Delaware"},
                    {"field": "term", "op": "GT", "value": "2 years"},
                ],
            }
        )
    )
    out = json.loads(cairn("fields", "query", str(tmp_path / "plan.json"), "-c", "ndas", data_dir=data).stdout)
    assert [row["externalId"] for row in out["rows"]] == ["acme.txt"]
    assert all(v["citation"] for v in out["rows"][0]["values"])
    # a changed file re-extracts on ingest
    (docs / "omega.txt").write_text(NDAS["omega.txt"].replace("New York", "Delaware"))
    r = cairn("ingest", str(docs), "-c", "ndas", "--lexical-only", data_dir=data)
    assert json.loads(r.stdout)["fields"] == {"documents": 1, "values": json.loads(r.stdout)["fields"]["values"]}
    (tmp_path / "bad.yaml").write_text("fields:\n  - {name: x, type: COLOR}\n")
    r = cairn("fields", "define", str(tmp_path / "bad.yaml"), "-c", "ndas", data_dir=data)
    assert one_line_error(r).startswith("bad.yaml: fields[0].type: 'COLOR'; one of NUMBER")
