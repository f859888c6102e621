"""``loadKnowledgeNetwork(sourceDir:)`` through the live server with real symbolic links:
nothing outside ``CAIRN_ONTOLOGY_SOURCE_DIRS`` is read, whether a linked directory or a
linked file leads there."""

from __future__ import annotations

import pytest

LOAD = "mutation($m:String!, $d:String!){loadKnowledgeNetwork(mapping:$m, sourceDir:$d){knId instances}}"
MAPPING = (
    "{id: linked, name: Linked, object_types: [{id: a, name: A, table: a, primary_key: [x], "
    "properties: [{name: x, type: integer}]}]}"
)


@pytest.fixture
def allowed(live, tmp_path):
    """``tmp_path/allowed`` added to the running server's allowed source dirs for one test."""
    root = tmp_path / "allowed"
    (root / "nw").mkdir(parents=True)
    (root / "nw" / "a.csv").write_text("x\n1\n2\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.csv").write_text("x\n7\n8\n9\n", encoding="utf-8")
    live.settings.ontology_source_dirs.append(root)
    try:
        yield root, outside
    finally:
        live.settings.ontology_source_dirs.remove(root)


def test_links_out_of_the_allowed_dir_are_refused_naming_the_path(live, allowed):
    root, outside = allowed
    ok = live.data(LOAD, {"m": MAPPING, "d": str(root / "nw")}, live.tokens["owner"])["loadKnowledgeNetwork"]
    assert ok["instances"] == {"a": 2}
    (root / "escape").symlink_to(outside, target_is_directory=True)
    r = live.gql(LOAD, {"m": MAPPING, "d": str(root / "escape")}, live.tokens["owner"])
    err = r.json()["errors"][0]
    assert r.status_code == 400 and err["extensions"]["code"] == "SOURCE_PATH_NOT_ALLOWED"
    assert err["extensions"]["path"] == str(root / "escape") and str(root / "escape") in err["message"]
    (root / "nw" / "a.csv").unlink()
    (root / "nw" / "a.csv").symlink_to(outside / "a.csv")
    r = live.gql(LOAD, {"m": MAPPING, "d": str(root / "nw")}, live.tokens["owner"])
    err = r.json()["errors"][0]
    assert r.status_code == 400 and err["extensions"]["code"] == "SOURCE_PATH_NOT_ALLOWED"
    assert err["extensions"]["path"] == str(root / "nw" / "a.csv")
    nets = {
        n["id"]: n["generation"]
        for n in live.data("{knowledgeNetworks{id generation}}", token=live.tokens["owner"])["knowledgeNetworks"]
    }
    assert nets["linked"] == 1  # neither refused load replaced the network
