"""The paged documents(collectionId, first, after) query, collections' document counts and
`cairn documents list` (SQLite and PostgreSQL, through the live server and the real CLI)."""

from __future__ import annotations

import base64

import pytest

pytestmark = pytest.mark.both_backends  # paging and counts in SQL (order, cursors)

DOCS_Q = """query($c: ID!, $f: Int, $a: String) { documents(collectionId: $c, first: $f, after: $a) {
  totalCount endCursor hasNextPage
  documents { id externalId title mediaType collectionId collectionName createdAt } } }"""


def page(live, coll: str, first: int | None = None, after: str | None = None, token: str | None = None):
    return live.gql(DOCS_Q, {"c": coll, "f": first, "a": after}, token or live.tokens["agent"]).json()


def test_documents_pages_through_a_collection_in_external_id_order(live):
    coll = live.ids["coll:handbook"]
    counts = {
        c["id"]: c["documentCount"]
        for c in live.data("query{collections{id documentCount}}", None, live.tokens["agent"])["collections"]
    }
    whole = page(live, coll, 200)["data"]["documents"]
    assert whole["totalCount"] == counts[coll] == len(whole["documents"]) >= 3
    assert whole["hasNextPage"] is False and whole["endCursor"] is None
    ext = [d["externalId"] for d in whole["documents"]]
    assert ext == sorted(ext)
    assert {d["collectionName"] for d in whole["documents"]} == {"handbook"}
    seen: list[str] = []
    after = None
    while True:
        got = page(live, coll, 2, after)["data"]["documents"]
        seen += [d["externalId"] for d in got["documents"]]
        assert got["totalCount"] == counts[coll]
        if not got["hasNextPage"]:
            break
        after = got["endCursor"]
    assert seen == ext  # every document once, in order


@pytest.mark.parametrize(
    "first,after,code,field",
    [
        (0, None, "PAGE_SIZE_OUT_OF_RANGE", "first"),
        (201, None, "PAGE_SIZE_OUT_OF_RANGE", "first"),
        (10, "not-a-cursor!", "INVALID_CURSOR", "after"),
        (10, base64.urlsafe_b64encode(b'{"c":"coll_other","k":"a"}').decode(), "INVALID_CURSOR", "after"),
    ],
)
def test_bad_page_size_or_cursor_is_a_coded_error(live, first, after, code, field):
    body = page(live, live.ids["coll:handbook"], first, after)
    ext = body["errors"][0]["extensions"]
    assert (ext["code"], ext["field"]) == (code, field), body
    if code == "PAGE_SIZE_OUT_OF_RANGE":
        assert ext["limit"] == 200


def test_another_workspace_collection_is_not_found(live):
    body = page(live, live.ids["coll:handbook"], 5, token=live.tokens["ownerB"])
    assert body["errors"][0]["extensions"]["code"] == "NOT_FOUND"


def test_envelope_names_the_registered_operation(live):
    body = page(live, live.ids["coll:finance"], 1)
    assert body["extensions"]["envelope"]["coordinate"] == "G1.U1.P1.Z2.A3"
