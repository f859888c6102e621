"""``cairn ontology load`` / ``list`` as an operator runs them (subprocesses on a temp data dir)."""

from __future__ import annotations

from tests.db.test_cli import cairn

MAPPING = """
id: pets
name: Pets
object_types:
  - id: pet
    name: Pet
    table: pets
    primary_key: [id]
    properties:
      - {name: id, type: integer}
      - {name: name, type: string, full_text: true}
      - {name: born, type: date}
"""


def test_load_list_and_errors(tmp_path):
    data, src = tmp_path / "data", tmp_path / "csv"
    src.mkdir()
    (src / "pets.csv").write_text("id,name,born\n1,Rex,2020-01-02\n2,Tom,\n", encoding="utf-8")
    mapping = tmp_path / "pets.yaml"
    mapping.write_text(MAPPING, encoding="utf-8")
    r = cairn("ontology", "load", str(mapping), "--source-dir", str(src), data_dir=data)
    assert r.returncode == 0, r.stderr
    assert "generation 1" in r.stderr and any("pet" in line and "2" in line for line in r.stderr.splitlines())
    r = cairn("ontology", "load", str(mapping), "--source-dir", str(src), data_dir=data)
    assert r.returncode == 0 and "generation 2" in r.stderr
    listing = cairn("ontology", "list", data_dir=data)
    assert listing.returncode == 0 and "pets" in listing.stdout and "pet (2)" in listing.stdout
    (src / "pets.csv").write_text("id,name,born\n1,Rex,yesterday\n", encoding="utf-8")
    r = cairn("ontology", "load", str(mapping), "--source-dir", str(src), data_dir=data)
    assert r.returncode == 2 and "born" in r.stderr and "not a valid date" in r.stderr
    r = cairn("ontology", "load", str(mapping), data_dir=data)
    assert r.returncode == 2 and "directory" in r.stderr
