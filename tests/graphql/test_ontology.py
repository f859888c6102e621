"""Ontology through the running server on Northwind (SPEC §6): load, objectTypes,
objectInstances (filters, conditions, sort, cursor/offset paging, totals, TOON), semantic
recall, trace interactions and idempotent retries. Expected values are computed from the
CSV files with the csv module, independently of the server."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import ROOT, shared_data
from tests.graphql.conftest import _agent

MAPPING = ROOT / "app" / "ontology" / "northwind.yaml"
_LOADED: dict[str, dict] = {}

INSTANCES = """query($kn:String!, $ot:String!, $f:[FilterInput!], $c:ConditionInput, $limit:Int! = 10, $offset:Int,
  $cursor:String, $sort:[SortInput!], $props:[String!], $fmt:ResponseFormat! = JSON, $trace:TraceInput) {
  objectInstances(knId:$kn, otId:$ot, filters:$f, condition:$c, limit:$limit, offset:$offset, cursor:$cursor,
                  sort:$sort, properties:$props, responseFormat:$fmt, trace:$trace) {
    rows toon totalCount cursor conditionSource filtersIgnored messages
    receipt { id operation conversationId interactionId invocationId replayed }
  }
}"""


def _csv(name: str) -> list[dict[str, str]]:
    with (shared_data("northwind", "csv") / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="session")
def northwind(live):
    """Northwind loaded through GraphQL (inline CSV files), once per live server."""
    if live.backend not in _LOADED:
        csv_dir = shared_data("northwind", "csv")
        files = [
            {"name": p.name, "content": p.read_text(encoding="utf-8")} for p in sorted(Path(csv_dir).glob("*.csv"))
        ]
        r = live.data(
            """mutation($m:String!, $files:[CsvFileInput!]){
            loadKnowledgeNetwork(mapping:$m, files:$files){knId generation instances embedded vectorModel}}""",
            {"m": MAPPING.read_text(encoding="utf-8"), "files": files},
            live.tokens["owner"],
        )
        _LOADED[live.backend] = r["loadKnowledgeNetwork"]
    return _LOADED[live.backend]


def _q(live, token=None, headers=None, **variables):
    variables.setdefault("kn", "northwind")
    r = live.gql(INSTANCES, variables, token or live.tokens["viewer"], headers=headers)
    return r.json()


def _ok(live, **variables):
    body = _q(live, **variables)
    assert not body.get("errors"), body.get("errors")
    return body["data"]["objectInstances"]


def _err(body) -> dict:
    assert body.get("errors"), body
    return body["errors"][0]


@pytest.mark.both_backends  # the load writes every instance in SQL
def test_load_reports_every_type(northwind):
    assert northwind["knId"] == "northwind"
    assert northwind["instances"] == {
        "category": 8,
        "product": 77,
        "supplier": 29,
        "customer": 91,
        "employee": 9,
        "shipper": 3,
        "order": 830,
        "order_line": 2155,
        "region": 4,
        "territory": 53,
    }
    assert northwind["embedded"] > 200 and northwind["vectorModel"].endswith("all-MiniLM-L6-v2")


def test_object_types_derive_operators_from_type_and_indexes(live, northwind):
    data = live.data(
        """{objectTypes(knId:"northwind"){objectTypes{id primaryKey instanceCount
        properties{name type fullTextIndex vectorIndex conditionOperations}}}}""",
        token=live.tokens["viewer"],
    )
    types = {t["id"]: t for t in data["objectTypes"]["objectTypes"]}
    assert types["order_line"]["primaryKey"] == ["OrderID", "ProductID"]
    product = {p["name"]: p for p in types["product"]["properties"]}
    assert "match" in product["ProductName"]["conditionOperations"]
    assert "knn" not in product["ProductName"]["conditionOperations"]
    assert (
        "knn" in product["Summary"]["conditionOperations"] and "match" not in product["Summary"]["conditionOperations"]
    )
    assert (
        "range" in product["UnitPrice"]["conditionOperations"]
        and "like" not in product["UnitPrice"]["conditionOperations"]
    )
    assert product["Discontinued"]["conditionOperations"] == ["==", "!=", "in", "not_in", "exist", "not_exist"]
    order = {p["name"]: p for p in types["order"]["properties"]}
    assert order["ShippedDate"]["type"] == "date" and ">=" in order["ShippedDate"]["conditionOperations"]


def test_cursor_walk_returns_each_match_once_with_ties(live, northwind):
    countries = {"France", "Germany", "Brazil"}
    expected = {int(o["OrderID"]) for o in _csv("orders.csv") if o["ShipCountry"] in countries}
    ship_via = {int(o["OrderID"]): int(o["ShipVia"]) for o in _csv("orders.csv")}
    variables = {
        "ot": "order",
        "f": [{"field": "ShipCountry", "operation": "in", "value": sorted(countries)}],
        "sort": [{"field": "ShipVia", "direction": "DESC"}],
        "limit": 23,
        "props": ["OrderID", "ShipVia"],
    }
    seen: list[int] = []
    page = _ok(live, **variables)
    assert page["totalCount"] == len(expected)
    pages = 1
    while True:
        seen += [r["OrderID"] for r in page["rows"]]
        assert all(set(r) == {"OrderID", "ShipVia", "_instanceIdentity"} for r in page["rows"])
        if not page["cursor"]:
            break
        page = _ok(live, cursor=page["cursor"], **variables)
        assert page["totalCount"] is None  # not computed on cursor pages, never a fake 0
        pages += 1
    assert len(seen) == len(set(seen)) == len(expected) and set(seen) == expected
    assert pages == -(-len(expected) // 23)
    # ties on ShipVia (3 values) are broken by the primary key, ascending
    assert seen == sorted(expected, key=lambda i: (-ship_via[i], i))


def test_totals_zero_offset_and_condition_tree(live, northwind):
    none = _ok(live, ot="order", f=[{"field": "ShipCountry", "operation": "==", "value": "Atlantis"}])
    assert none["totalCount"] == 0 and none["rows"] == [] and none["cursor"] is None
    orders = _csv("orders.csv")
    tree = {
        "operation": "or",
        "subConditions": [
            {
                "operation": "and",
                "subConditions": [
                    {"field": "ShipCountry", "operation": "==", "value": "France", "valueFrom": "CONST"},
                    {"field": "Freight", "operation": ">", "value": 100, "valueFrom": "CONST"},
                ],
            },
            {"field": "ShipCountry", "operation": "==", "value": "Sweden", "valueFrom": "CONST"},
        ],
    }
    want = sorted(
        int(o["OrderID"])
        for o in orders
        if (o["ShipCountry"] == "France" and float(o["Freight"]) > 100) or o["ShipCountry"] == "Sweden"
    )
    page = _ok(live, ot="order", c=tree, limit=1000, sort=[{"field": "OrderID", "direction": "ASC"}])
    assert [r["OrderID"] for r in page["rows"]] == want and page["totalCount"] == len(want)
    assert page["conditionSource"] == "condition" and page["filtersIgnored"] is False
    both = _ok(live, ot="order", c=tree, f=[{"field": "ShipCountry", "operation": "==", "value": "Italy"}], limit=1)
    assert both["totalCount"] == len(want) and both["filtersIgnored"] is True
    assert "filters were ignored" in both["messages"][0]
    first = _ok(live, ot="order", c=tree, limit=10, sort=[{"field": "OrderDate", "direction": "ASC"}])
    jump = _ok(live, ot="order", c=tree, limit=5, offset=5, sort=[{"field": "OrderDate", "direction": "ASC"}])
    assert jump["rows"] == first["rows"][5:10] and jump["totalCount"] == len(want)


def test_paging_and_sort_refusals(live, northwind):
    page = _ok(live, ot="order", limit=5, f=[{"field": "ShipCountry", "operation": "==", "value": "France"}])
    other = _q(
        live,
        ot="order",
        limit=5,
        cursor=page["cursor"],
        f=[{"field": "ShipCountry", "operation": "==", "value": "Germany"}],
    )
    assert _err(other)["extensions"]["code"] == "INVALID_CURSOR"
    forged = page["cursor"][:-2] + ("AA" if not page["cursor"].endswith("AA") else "BB")
    assert (
        _err(
            _q(
                live,
                ot="order",
                limit=5,
                cursor=forged,
                f=[{"field": "ShipCountry", "operation": "==", "value": "France"}],
            )
        )["extensions"]["code"]
        == "INVALID_CURSOR"
    )
    both = _err(_q(live, ot="order", cursor=page["cursor"], offset=5))
    assert both["extensions"]["code"] == "BAD_USER_INPUT" and both["extensions"]["field"] == "cursor"
    legacy = live.gql(
        '{objectInstances(knId:"northwind", otId:"order", searchAfter:[10248]){totalCount}}',
        token=live.tokens["viewer"],
    ).json()
    assert _err(legacy)["extensions"]["field"] == "searchAfter" and "cursor" in _err(legacy)["message"]
    for limit in (0, 10_001):
        assert _err(_q(live, ot="order", limit=limit))["extensions"]["field"] == "limit"
    bad_sort = _err(_q(live, ot="order", sort=[{"field": "Nope", "direction": "ASC"}]))
    assert bad_sort["extensions"]["code"] == "BAD_USER_INPUT" and "Nope" in bad_sort["message"]
    bad_dir = _q(live, ot="order", sort=[{"field": "Freight", "direction": "SIDEWAYS"}])
    assert _err(bad_dir)["extensions"]["code"] == "BAD_USER_INPUT"
    assert _err(_q(live, ot="order", props=["Nope"]))["extensions"]["field"] == "properties"


@pytest.mark.parametrize(
    "ot, leaf, field, op",
    [
        (
            "product",
            {"field": "UnitPrice", "operation": "match", "value": "18", "valueFrom": "CONST"},
            "UnitPrice",
            "match",
        ),
        (
            "product",
            {
                "field": "ProductName",
                "operation": "knn",
                "value": "tea",
                "valueFrom": "CONST",
                "limitKey": "k",
                "limitValue": 3,
            },
            "ProductName",
            "knn",
        ),
        (
            "product",
            {"field": "UnitsInStock", "operation": "like", "value": "1%", "valueFrom": "CONST"},
            "UnitsInStock",
            "like",
        ),
        ("product", {"field": "Summary", "operation": "knn", "value": "tea", "valueFrom": "CONST"}, "Summary", "knn"),
        ("product", {"field": "UnitPrice", "operation": ">", "value": 5}, "UnitPrice", ">"),
        ("order", {"field": "Shipped", "operation": "==", "value": "x", "valueFrom": "CONST"}, "Shipped", "=="),
    ],
)
def test_invalid_conditions_name_field_and_operator(live, northwind, ot, leaf, field, op):
    err = _err(_q(live, ot=ot, c=leaf))
    assert err["extensions"]["code"] == "INVALID_CONDITION"
    assert err["extensions"]["field"] == field and err["extensions"]["operation"] == op
    assert field in err["message"] and op in err["message"]


def test_score_only_with_scoring_operators_and_knn(live, northwind):
    plain = _ok(live, ot="product", f=[{"field": "CategoryName", "operation": "==", "value": "Seafood"}], limit=100)
    assert plain["totalCount"] == 12 and all("_score" not in r for r in plain["rows"])
    assert all(r["_instanceIdentity"] == {"ProductID": r["ProductID"]} for r in plain["rows"])
    knn = _ok(
        live,
        ot="product",
        c={
            "field": "Summary",
            "operation": "knn",
            "value": "cheese",
            "valueFrom": "CONST",
            "limitKey": "k",
            "limitValue": 4,
        },
    )
    assert knn["totalCount"] == 4 and all(r["CategoryName"] == "Dairy Products" for r in knn["rows"])
    scores = [r["_score"] for r in knn["rows"]]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] <= 1
    match = _ok(
        live,
        ot="order",
        c={"field": "Summary", "operation": "match", "value": "late France", "valueFrom": "CONST"},
        limit=3,
        props=["OrderID", "ShippingStatus", "ShipCountry"],
    )
    top = match["rows"][0]
    assert top["ShippingStatus"] == "shipped late" and top["ShipCountry"] == "France" and top["_score"] > 0


def test_toon_round_trips_rows(live, northwind):
    from toon_format import decode

    variables = {
        "ot": "customer",
        "f": [{"field": "Country", "operation": "==", "value": "Mexico"}],
        "sort": [{"field": "CompanyName", "direction": "ASC"}],
        "limit": 50,
    }
    rows = _ok(live, **variables)["rows"]
    toon = _ok(live, fmt="TOON", **variables)
    assert toon["rows"] is None and toon["totalCount"] == len(rows) == 5
    assert decode(toon["toon"]) == {"rows": rows}
    assert len(toon["toon"]) < len(str(rows))


RECALL = """query($q:String!, $types:[String!], $ex:[String!], $groups:[String!], $rerank:Boolean! = false) {
  semanticRecall(knId:"northwind", query:$q, objectTypes:$types, excludeObjectTypes:$ex, conceptGroups:$groups,
                 rerank:$rerank) {
    nodes { objectTypeId instanceIdentity score rerankerScore matchedBy properties }
    objectTypes selectedObjectTypes message
  }
}"""


def _recall(live, token=None, **variables):
    data = live.data(RECALL, variables, token or live.tokens["viewer"])
    return data["semanticRecall"]


def test_semantic_recall_answers_and_scopes(live, northwind):
    r = _recall(live, q="seafood suppliers in Scandinavia")
    top = [(n["objectTypeId"], n["instanceIdentity"]) for n in r["nodes"][:5]]
    assert ("supplier", {"SupplierID": 17}) in top or ("supplier", {"SupplierID": 21}) in top
    assert {t["id"] for t in r["objectTypes"]} == {n["objectTypeId"] for n in r["nodes"]}
    scoped = _recall(live, q="seafood", types=["product", "supplier"], ex=["supplier"])
    assert {n["objectTypeId"] for n in scoped["nodes"]} == {"product"}
    unknown = _recall(live, q="seafood", types=["nope", "nada"])
    assert unknown["nodes"] == [] and "nope" in unknown["message"] and "nada" in unknown["message"]
    staff = _recall(live, q="London", groups=["staff"])
    assert staff["nodes"] and {n["objectTypeId"] for n in staff["nodes"]} <= {"employee", "region", "territory"}
    nothing = _recall(live, q="zzqx wvvq", types=["order"])
    assert nothing["nodes"] == [] and nothing["message"]


def test_rerank_falls_back_to_fused_order(live, northwind):
    plain = _recall(live, q="cheese from France")
    reranked = _recall(live, q="cheese from France", rerank=True)
    assert [n["score"] for n in reranked["nodes"]] == [n["score"] for n in plain["nodes"]]
    assert all(n["rerankerScore"] is None for n in reranked["nodes"])
    assert "cross-encoder" in reranked["message"]


def test_agent_reads_but_cannot_load_and_workspaces_are_isolated(live, northwind):
    agent = _agent(live, "onto-reader", ["context:read"])
    page = _q(live, token=agent, ot="shipper")
    assert page["data"]["objectInstances"]["totalCount"] == 3
    load = live.gql('mutation{loadKnowledgeNetwork(mapping:"{}"){knId}}', token=agent).json()
    assert _err(load)["extensions"]["code"] == "AGENT_OPERATION_NOT_ALLOWED"
    other = live.gql('{objectTypes(knId:"northwind"){knId}}', token=live.tokens["ownerB"]).json()
    assert _err(other)["extensions"]["code"] == "NOT_FOUND"


def test_load_refuses_sql_sources_and_unlisted_dirs(live):
    sql = (
        "{id: x, name: X, source: {kind: sql, url: 'sqlite+aiosqlite:////etc/passwd'}, object_types: "
        "[{id: a, name: A, table: a, primary_key: [x], properties: [{name: x, type: integer}]}]}"
    )
    r = live.gql(
        "mutation($m:String!){loadKnowledgeNetwork(mapping:$m){knId}}", {"m": sql}, live.tokens["owner"]
    ).json()
    assert _err(r)["extensions"]["field"] == "mapping.source.kind"
    csv_map = sql.replace("source: {kind: sql, url: 'sqlite+aiosqlite:////etc/passwd'}, ", "")
    r = live.gql(
        'mutation($m:String!){loadKnowledgeNetwork(mapping:$m, sourceDir:"/etc"){knId}}',
        {"m": csv_map},
        live.tokens["owner"],
    ).json()
    assert _err(r)["extensions"]["field"] == "sourceDir"
    attach = csv_map.replace("table: a", "sql: \"ATTACH DATABASE '/tmp/x.db' AS y\"")
    r = live.gql(
        'mutation($m:String!){loadKnowledgeNetwork(mapping:$m, files:[{name:"a.csv", content:"x\\n1\\n"}]){knId}}',
        {"m": attach},
        live.tokens["owner"],
    ).json()
    assert _err(r)["extensions"]["code"] == "BAD_USER_INPUT" and "source query failed" in _err(r)["message"]


@pytest.mark.both_backends  # receipts and idempotent retries are stored
def test_trace_receipts_and_idempotent_retries(live, northwind):
    token = live.tokens["editor"]
    started = live.data("mutation{startInteraction{conversationId interactionId}}", token=token)["startInteraction"]
    trace = {"conversationId": started["conversationId"], "interactionId": started["interactionId"]}
    page = _q(live, token=token, ot="shipper", trace=trace)
    receipt = page["data"]["objectInstances"]["receipt"]
    assert receipt["conversationId"] == trace["conversationId"] and receipt["interactionId"] == trace["interactionId"]
    assert receipt["operation"] == "objectInstances" and receipt["replayed"] is False
    again = live.data(
        "mutation($c:String){startInteraction(conversationId:$c){conversationId interactionId}}",
        {"c": trace["conversationId"]},
        token,
    )["startInteraction"]
    assert again["conversationId"] == trace["conversationId"] and again["interactionId"] != trace["interactionId"]
    half = _err(_q(live, token=token, ot="shipper", trace={"conversationId": trace["conversationId"]}))
    assert (
        half["extensions"]["code"] == "TRACE_CONTEXT_INVALID" and half["extensions"]["field"] == "trace.interactionId"
    )
    misspelt = live.gql(
        '{objectInstances(knId:"northwind", otId:"shipper", trace:{conversationID:"a", '
        'interactionId:"b"}){totalCount}}',
        token=token,
    ).json()
    assert _err(misspelt)["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    forged = _err(_q(live, token=token, ot="shipper", trace={"conversationId": "conv_x", "interactionId": "int_x"}))
    assert forged["extensions"]["code"] == "NOT_FOUND"
    assert _q(live, token=token, ot="shipper", trace={})["data"]["objectInstances"]["receipt"] is None

    headers = {"X-Client-Invocation-Id": f"retry-{live.backend}-1"}
    variables = {"ot": "product", "f": [{"field": "UnitsInStock", "operation": "==", "value": 0}], "limit": 2}
    first = _q(live, token=token, headers=headers, **variables)["data"]["objectInstances"]
    second = _q(live, token=token, headers=headers, **variables)["data"]["objectInstances"]
    assert first["receipt"]["replayed"] is False and second["receipt"]["replayed"] is True
    assert second["receipt"]["id"] == first["receipt"]["id"] and second["rows"] == first["rows"]
    assert second["cursor"] == first["cursor"] and second["totalCount"] == first["totalCount"] == 5
    changed = _q(live, token=token, headers=headers, **{**variables, "limit": 3})
    assert _err(changed)["extensions"]["code"] == "IDEMPOTENCY_KEY_REUSED"


def test_documented_example_runs(live, northwind):
    doc = (ROOT / "docs" / "capabilities.md").read_text(encoding="utf-8")
    section = doc.split("## Ontology", 1)[1]
    query = section.split("```graphql", 1)[1].split("```", 1)[0]
    data = live.data(query, token=live.tokens["viewer"])
    orders = _csv("orders.csv")
    want = sum(1 for o in orders if o["ShipCountry"] == "France" or 100 <= float(o["Freight"]) <= 500)
    assert data["objectInstances"]["totalCount"] == want
    dates = [r["OrderDate"] for r in data["objectInstances"]["rows"]]
    assert dates == sorted(dates, reverse=True) and set(data["objectInstances"]["rows"][0]) == {
        "OrderID",
        "OrderDate",
        "_instanceIdentity",
    }
    assert data["semanticRecall"]["nodes"][0]["instanceIdentity"] in ({"SupplierID": 17}, {"SupplierID": 21})


def test_cursor_walk_with_nulls_in_the_sort_key(live, northwind):
    orders = [o for o in _csv("orders.csv") if o["ShipCountry"] in ("Germany", "Venezuela")]
    shipped = sorted(
        (o for o in orders if o["ShippedDate"]), key=lambda o: (o["ShippedDate"], -int(o["OrderID"])), reverse=True
    )
    unshipped = sorted((o for o in orders if not o["ShippedDate"]), key=lambda o: int(o["OrderID"]))
    want = [int(o["OrderID"]) for o in shipped + unshipped]  # DESC, nulls last, ties by OrderID asc
    assert unshipped, "the data set has unshipped orders to these countries"
    variables = {
        "ot": "order",
        "c": {"field": "ShipCountry", "operation": "in", "value": ["Germany", "Venezuela"], "valueFrom": "CONST"},
        "sort": [{"field": "ShippedDate", "direction": "DESC"}],
        "limit": 9,
        "props": ["OrderID"],
    }
    page, seen = _ok(live, **variables), []
    assert page["totalCount"] == len(want)
    while True:
        seen += [r["OrderID"] for r in page["rows"]]
        if not page["cursor"]:
            break
        page = _ok(live, cursor=page["cursor"], **variables)
        assert page["totalCount"] is None
    assert seen == want
