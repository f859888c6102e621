"""Relevance in packs (issue 35): ``budget.maxItems``, ``relevance.minRelativeScore`` and the
footer's ``omitted`` counts, through the ASGI app (GraphQL, the NDJSON route, replay) with the
real embedding model.

The corpus is the issue's case: one kitchen notice among Python's reference topics
(``pydoc_data.topics``, the ``cairn demo`` corpus) that share words such as "close" with the
question "When does the kitchen close?".
"""

from __future__ import annotations

import json

import pytest

from tests.graphql.conftest import _bootstrap
from tests.graphql.in_process import InProcess, in_process_app

pytestmark = pytest.mark.model

TASK = "When does the kitchen close?"
KITCHEN = (
    "The staff kitchen on the third floor is open from 7:30 to 18:00 on weekdays. On Fridays it closes "
    "at 14:00 for deep cleaning. Please take your dishes out of the sink before you leave."
)
TOPICS = ("objects", "operator-summary", "with", "try", "exceptions", "truth", "pass", "break")
QUERY = """query($i: ContextPackInput!) { contextPack(input: $i) {
  replayId truncated candidates notes
  omitted { belowRelevanceFloor overMaxItems overTokenBudget }
  items { rank score externalId citation { passageId } } } }"""
REPLAY = """query($id: ID!, $t: String) { replay(replayId: $id, mode: RECOMPUTE, task: $t) {
  pack { items { citation { passageId } } omitted { belowRelevanceFloor overMaxItems } }
  diff { added { rank } removed { rank } moved { oldRank } unchanged } } }"""


@pytest.fixture(scope="module")
async def kitchen(tmp_path_factory) -> InProcess:
    """The kitchen notice and eight Python reference topics, ingested through GraphQL."""
    from pydoc_data.topics import topics

    async with in_process_app(tmp_path_factory.mktemp("kitchen"), embedder="local") as app:
        app.tokens, app.ids = await _bootstrap(app.settings.resolved_database_url)
        owner = app.tokens["owner"]
        r = await app.data("mutation($n:String!){createCollection(name:$n){id}}", {"n": "office"}, owner)
        docs = [("notice/kitchen", "Staff kitchen hours", KITCHEN)]
        docs += [(f"pydoc/{t}", f"Python reference: {t}", topics[t]) for t in TOPICS]
        for ext, title, text in docs:
            await app.data(
                "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
                {"i": {"collectionId": r["createCollection"]["id"], "externalId": ext, "title": title, "text": text}},
                owner,
            )
        yield app


async def _pack(app: InProcess, **inp) -> dict:
    return (await app.data(QUERY, {"i": {"task": TASK, **inp}}, app.tokens["owner"]))["contextPack"]


async def test_without_a_floor_the_budget_fills_with_off_topic_passages(kitchen: InProcess):
    p = await _pack(kitchen, budget={"maxTokens": 32000})
    assert p["items"][0]["externalId"] == "notice/kitchen"
    assert len(p["items"]) > 5 and all(i["externalId"].startswith("pydoc/") for i in p["items"][1:])
    assert p["omitted"] == {"belowRelevanceFloor": 0, "overMaxItems": 0, "overTokenBudget": 0}


async def test_a_relative_floor_leaves_out_the_off_topic_tail_and_counts_it(kitchen: InProcess):
    full = await _pack(kitchen, budget={"maxTokens": 32000})
    floored = await _pack(kitchen, budget={"maxTokens": 32000}, relevance={"minRelativeScore": 0.5})
    top = full["items"][0]["score"]
    expected = [i["citation"]["passageId"] for i in full["items"] if i["score"] >= 0.5 * top]
    assert [i["citation"]["passageId"] for i in floored["items"]] == expected
    assert floored["items"][0]["externalId"] == "notice/kitchen"
    assert len(floored["items"]) < len(full["items"])
    # every candidate of the full pack (all resolved at this budget) is either read or under the floor
    below = floored["omitted"]["belowRelevanceFloor"]
    assert below > 0 and below + floored["candidates"] == full["candidates"]
    assert floored["omitted"]["overTokenBudget"] == 0 and not floored["truncated"]
    assert any(n.startswith(f"relevance floor: {below} candidates") for n in floored["notes"])


async def test_max_items_keeps_the_best_items_and_counts_the_rest(kitchen: InProcess):
    full = await _pack(kitchen, budget={"maxTokens": 32000})
    two = await _pack(kitchen, budget={"maxTokens": 32000, "maxItems": 2})
    assert [i["citation"] for i in two["items"]] == [i["citation"] for i in full["items"][:2]]
    assert two["omitted"] == {"belowRelevanceFloor": 0, "overMaxItems": len(full["items"]) - 2, "overTokenBudget": 0}
    assert not two["truncated"]


async def test_budget_and_max_items_are_counted_apart(kitchen: InProcess):
    small = await _pack(kitchen, budget={"maxTokens": 400})
    assert small["truncated"] and small["omitted"]["overTokenBudget"] > 0
    assert small["omitted"]["overMaxItems"] == 0
    one = await _pack(kitchen, budget={"maxTokens": 400, "maxItems": 1})
    assert len(one["items"]) == 1 and one["omitted"]["overMaxItems"] > 0
    assert one["omitted"]["overTokenBudget"] == 0 and not one["truncated"]


@pytest.mark.parametrize(
    ("inp", "field", "limit"),
    [
        ({"budget": {"maxItems": 0}}, "input.budget.maxItems", "1-200"),
        ({"budget": {"maxItems": 201}}, "input.budget.maxItems", "1-200"),
        ({"relevance": {"minRelativeScore": 0}}, "input.relevance.minRelativeScore", "(0, 1]"),
        ({"relevance": {"minRelativeScore": 1.5}}, "input.relevance.minRelativeScore", "(0, 1]"),
        ({"relevance": {"minRelativeScore": -0.2}}, "input.relevance.minRelativeScore", "(0, 1]"),
    ],
)
async def test_out_of_range_values_are_refused_with_field_and_limit(kitchen: InProcess, inp, field, limit):
    r = await kitchen.gql(QUERY, {"i": {"task": TASK, **inp}}, kitchen.tokens["owner"])
    err = r.json()["errors"][0]
    assert r.status_code == 400
    assert err["extensions"]["code"] == "BAD_USER_INPUT"
    assert err["extensions"]["field"] == field and err["extensions"]["limit"] == limit
    assert field in err["message"]


async def test_ndjson_route_takes_the_fields_and_reports_omitted(kitchen: InProcess):
    body = {"task": TASK, "budget": {"maxTokens": 32000, "maxItems": 3}, "relevance": {"minRelativeScore": 0.05}}
    r = await kitchen.client.post(
        "/v1/context-packs/stream", json=body, headers={"Authorization": f"Bearer {kitchen.tokens['owner']}"}
    )
    assert r.status_code == 200
    lines = [json.loads(line) for line in r.text.splitlines() if line]
    items, footer = [x for x in lines if x["type"] == "item"], lines[-1]
    p = await _pack(kitchen, **{k: v for k, v in body.items() if k != "task"})
    assert [i["citation"]["passageId"] for i in items] == [i["citation"]["passageId"] for i in p["items"]]
    assert len(items) == 3 and footer["omitted"] == p["omitted"]
    bad = await kitchen.client.post(
        "/v1/context-packs/stream",
        json={"task": TASK, "relevance": {"minRelativeScore": "0.3"}},
        headers={"Authorization": f"Bearer {kitchen.tokens['owner']}"},
    )
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["extensions"]["field"] == "input.relevance.minRelativeScore"


async def test_recompute_rebuilds_a_floored_pack_with_its_floor(kitchen: InProcess):
    p = await _pack(kitchen, budget={"maxTokens": 32000, "maxItems": 4}, relevance={"minRelativeScore": 0.2})
    r = (await kitchen.data(REPLAY, {"id": p["replayId"], "t": TASK}, kitchen.tokens["owner"]))["replay"]
    assert r["diff"] == {"added": [], "removed": [], "moved": [], "unchanged": len(p["items"])}
    assert [i["citation"] for i in r["pack"]["items"]] == [i["citation"] for i in p["items"]]
    assert r["pack"]["omitted"]["belowRelevanceFloor"] == p["omitted"]["belowRelevanceFloor"]
    assert r["pack"]["omitted"]["overMaxItems"] == p["omitted"]["overMaxItems"]
