"""MCP for a model that knows nothing (issue 35 item 2), over streamable HTTP with the SDK's own
client against one server of this module (the templates server of
tests/graphql/test_templates.py: a tiny SQLite business database, no embedder):

- ``tools/list`` shows only what the credential may call: a ``context:read`` credential sees
  no write tool and no template tool; ``queries:run`` adds the template tools;
- an LLM-style walk needs no id from outside the tools: list collections → list fields → query
  fields; list query templates → run one with parameters built from their declarations;
- refusals name the tool's own argument paths (``budget.maxTokens``, ``fields``), not the
  GraphQL operation's input (``input.…``, ``plan.…``).
"""

from __future__ import annotations

import asyncio

from cairn.app.mcp import TOOLS
from tests.db.test_fields import NDAS
from tests.graphql.test_fields import FIELDS, PLAN_Q
from tests.graphql.test_mcp import call, session
from tests.graphql.test_templates import TEMPLATE, _approved, served

__all__ = ["served"]  # the server fixture of this module (one per module)

DELAWARE = {"field": "jurisdiction", "op": "EQ", "value": "Delaware"}
WRITES = {name for name, t in TOOLS.items() if not t.read_only}


def _listing(live, token: str):
    async def go():
        async with session(live, token) as s:
            return (await s.list_tools()).tools

    return {t.name: t for t in asyncio.run(go())}


def test_a_credential_lists_only_the_tools_it_may_call(served):
    reader = _listing(served, served.tokens["reader"])  # context:read
    assert {"remember", "forget", "report_context_gap", "create_decision"} == WRITES
    assert not set(reader) & WRITES and all(t.annotations.readOnlyHint for t in reader.values())
    assert {"context_pack", "list_collections", "list_fields", "query_fields", "list_object_types"} <= set(reader)
    assert not {"list_query_templates", "run_query_template", "recall"} & set(reader)
    agent = _listing(served, served.tokens["agent"])  # context:read + queries:run
    assert set(agent) - set(reader) == {"list_query_templates", "run_query_template"}
    assert list(agent) == [n for n in TOOLS if n in agent]  # in the table's order
    # every listed tool declares the shape of its result
    assert all(t.outputSchema and t.outputSchema["type"] == "object" for t in agent.values())
    # a member sees what its role may do: an owner also the memory and decision tools
    owner = _listing(served, served.tokens["owner"])
    assert {"remember", "create_decision", "run_query_template"} <= set(owner)
    # a hidden tool called anyway is refused with its code, as before
    r = call(served, served.tokens["reader"], "remember", {"namespace": "n", "text": "a note"})
    assert r.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"


def _value_of(declared: dict) -> object:
    """A value a model would send for a declared template parameter (its type and limits only)."""
    if "default" in declared:
        return declared["default"]
    if declared["type"] == "list":
        return ["cherry"][: declared.get("maxItems", 1)]
    return {"integer": 1, "float": 1.0, "date": "2024-01-01", "boolean": True}.get(declared["type"], "x")


def test_an_llm_walk_needs_no_id_from_outside(served):
    owner = served.tokens["owner"]
    coll = served.data('mutation{createCollection(name:"ndas"){id}}', token=owner)["createCollection"]["id"]
    for ext, text in NDAS.items():
        served.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){status}}",
            {"i": {"collectionId": coll, "externalId": ext, "title": ext, "text": text}},
            owner,
        )
    served.data(
        "mutation($c:ID!,$f:[FieldDefinitionInput!]!){defineFields(collectionId:$c, fields:$f)}",
        {"c": coll, "f": FIELDS},
        owner,
    )
    served.data("mutation($c:ID!){extractFields(collectionId:$c){documents}}", {"c": coll}, owner)
    template_id = _approved(served, {**TEMPLATE, "name": "discovery_items"})

    async def walk() -> dict:
        """What a model does with only the tools: every id below comes from a tool result."""
        seen: dict = {}
        async with session(served, served.tokens["agent"]) as s:
            collections = (await s.call_tool("list_collections", {})).structuredContent["collections"]
            ndas = next(c for c in collections if c["name"] == "ndas")
            seen["collection"] = ndas
            fields = (await s.call_tool("list_fields", {"collectionId": ndas["id"]})).structuredContent["fields"]
            seen["fields"] = [f["name"] for f in fields]
            seen["query"] = await s.call_tool(
                "query_fields",
                {
                    "collectionId": ndas["id"],
                    "fields": ["jurisdiction"],
                    "filters": [DELAWARE],
                },
            )
            templates = (await s.call_tool("list_query_templates", {})).structuredContent["queryTemplates"]
            chosen = next(t for t in templates if t["name"] == "discovery_items")
            seen["template"] = chosen
            parameters = {p["name"]: _value_of(p) for p in chosen["parameters"]}
            seen["run"] = await s.call_tool(
                "run_query_template", {"templateId": chosen["id"], "parameters": parameters}
            )
        return seen

    seen = asyncio.run(walk())
    assert (seen["collection"]["id"], seen["collection"]["documentCount"]) == (coll, len(NDAS))
    assert seen["fields"] == sorted(f["name"] for f in FIELDS)
    q = seen["query"]
    assert not q.isError, q.structuredContent
    plan = {"collectionId": coll, "fields": ["jurisdiction"], "filters": [DELAWARE]}
    want = served.data(PLAN_Q, {"p": plan}, served.tokens["agent"])["queryFields"]["rows"]
    assert [r["externalId"] for r in q.structuredContent["rows"]] == [r["externalId"] for r in want]
    assert len(want) == 2  # acme.txt and gamma.txt are governed by Delaware law
    assert seen["template"]["id"] == template_id and "sql" not in seen["template"]
    assert [(p["name"], p["type"]) for p in seen["template"]["parameters"]] == [("names", "list"), ("since", "date")]
    run = seen["run"]
    assert not run.isError, run.structuredContent
    assert [row["name"] for row in run.structuredContent["rows"]] == ["cherry"]


KN = """id: shop
name: Shop
description: Products and their prices.
source: {kind: csv}
object_types:
  - id: product
    name: Product
    description: A product with its price.
    sql: SELECT ProductID, Name, Price FROM products
    primary_key: [ProductID]
    properties:
      - {name: ProductID, type: integer}
      - {name: Name, type: string, full_text: true}
      - {name: Price, type: float}
"""


def test_an_llm_walk_through_a_knowledge_network(served):
    """networks → object types (with each property's operators) → instances, ids from the tools only."""
    served.data(
        "mutation($m:String!, $files:[CsvFileInput!]){loadKnowledgeNetwork(mapping:$m, files:$files){knId}}",
        {"m": KN, "files": [{"name": "products.csv", "content": "ProductID,Name,Price\n1,Tea,4.5\n2,Coffee,9\n"}]},
        served.tokens["owner"],
    )

    async def walk():
        async with session(served, served.tokens["reader"]) as s:
            networks = (await s.call_tool("list_knowledge_networks", {})).structuredContent["knowledgeNetworks"]
            kn = next(n for n in networks if n["name"] == "Shop")
            types = (await s.call_tool("list_object_types", {"knId": kn["id"]})).structuredContent["objectTypes"]
            product = types[0]
            price = next(p for p in product["properties"] if p["type"] == "float")
            assert ">" in price["conditionOperations"]
            condition = {"operation": ">", "field": price["name"], "value": 5, "valueFrom": "const"}
            args = {"knId": kn["id"], "otId": product["id"], "condition": condition}
            rows = await s.call_tool("object_instances", args)
            return rows, await s.call_tool("semantic_recall", {"knId": kn["id"], "query": "Coffee"})

    r, recalled = asyncio.run(walk())  # the SDK client checked each result against its outputSchema
    assert not r.isError, r.structuredContent
    assert [row["Name"] for row in r.structuredContent["rows"]] == ["Coffee"]
    assert not recalled.isError, recalled.structuredContent
    assert [n["properties"]["Name"] for n in recalled.structuredContent["nodes"]] == ["Coffee"]


def test_refusals_name_the_tools_own_arguments(served):
    token = served.tokens["agent"]
    err = call(served, token, "context_pack", {"task": "items", "budget": {"maxTokens": 100}}).structuredContent
    assert (err["error"]["code"], err["error"]["field"], err["error"]["limit"]) == (
        "BAD_USER_INPUT",
        "budget.maxTokens",
        "256-32000",
    )
    assert "input." not in err["error"]["message"]
    err = call(served, token, "query_fields", {"collectionId": "col_x", "fields": []}).structuredContent["error"]
    assert (err["code"], err["field"]) == ("FIELD_QUERY_NO_FIELDS", "fields")
    err = call(served, token, "list_object_types", {"knId": "nope"}).structuredContent["error"]
    assert err["code"] == "NOT_FOUND"
    err = call(served, token, "context_pack", {"task": "x", "budget": {"maxTokens": 300}, "topK": 3})
    assert err.structuredContent["error"]["field"] == "topK"  # the unknown argument itself
