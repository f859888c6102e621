"""Learned fields over GraphQL: members define and extract, an agent with context:read asks the
Delaware question as one queryFields plan, every value cited against document(id)."""

from __future__ import annotations

import pytest

from tests.db.test_fields import NDAS

pytestmark = pytest.mark.both_backends  # defined fields and extracted values are stored and queried

FIELDS = [
    {"name": "effective_date", "type": "DATE", "description": "the date the agreement is effective"},
    {"name": "jurisdiction", "type": "TEXT", "description": "the state whose laws govern the agreement"},
    {"name": "party", "type": "TEXT", "description": "a party to the agreement", "multiplicity": "MANY"},
    {"name": "term", "type": "DURATION", "description": "how long the agreement lasts (term)"},
]
PLAN_Q = """query($p: FieldQueryPlanInput!) { queryFields(plan: $p) {
  matched documents incomplete coverageLines coverage { field coverage }
  groups { key documents value }
  rows { documentId externalId versionId values { field value key stale uncitedReason
         citation { documentId versionId passageId start end sha256 } } } } }"""


def test_fields_over_graphql(live):
    owner, agent = live.tokens["owner"], live.tokens["agentReadOnly"]
    coll = live.data('mutation{createCollection(name:"ndas"){id}}', token=owner)["createCollection"]["id"]
    for ext, text in NDAS.items():
        live.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){status}}",
            {"i": {"collectionId": coll, "externalId": ext, "title": ext, "text": text}},
            owner,
        )
    names = live.data(
        "mutation($c:ID!,$f:[FieldDefinitionInput!]!){defineFields(collectionId:$c, fields:$f)}",
        {"c": coll, "f": FIELDS},
        owner,
    )["defineFields"]
    assert names == ["effective_date", "jurisdiction", "party", "term"]
    # an agent cannot define fields (members only)
    r = live.gql(
        "mutation($c:ID!,$f:[FieldDefinitionInput!]!){defineFields(collectionId:$c, fields:$f)}",
        {"c": coll, "f": FIELDS},
        agent,
    ).json()
    assert r["errors"][0]["extensions"]["code"] != "INTERNAL_SERVER_ERROR" and r["data"] is None
    ex = live.data("mutation($c:ID!){extractFields(collectionId:$c){documents values}}", {"c": coll}, owner)
    assert ex["extractFields"]["documents"] == 3
    fields = live.data("query($c:ID!){fields(collectionId:$c){name coverage documents model}}", {"c": coll}, agent)
    cov = {f["name"]: f["coverage"] for f in fields["fields"]}
    assert cov["jurisdiction"] == 1.0 and 0 < cov["term"] < 0.9
    plan = {
        "collectionId": coll,
        "fields": ["party", "jurisdiction", "term"],
        "filters": [
            {"field": "jurisdiction", "op": "EQ", "value": "Delaware"},
            {"field": "term", "op": "GT", "value": "2 years"},
        ],
    }
    res = live.data(PLAN_Q, {"p": plan}, agent)["queryFields"]
    assert [r["externalId"] for r in res["rows"]] == ["acme.txt"]
    row = res["rows"][0]
    doc = live.data("query($id:ID!){document(id:$id){versions{id text}}}", {"id": row["documentId"]}, agent)["document"]
    text = {v["id"]: v["text"] for v in doc["versions"]}[row["versionId"]]
    for v in row["values"]:
        c = v["citation"]
        assert c and not v["stale"] and c["versionId"] == row["versionId"]
        assert (
            text[c["start"] : c["end"]].replace("\n", " ") in {"Delaware", "three (3) years"} or v["field"] == "party"
        )
    assert res["incomplete"] and any(line.startswith("term: 2 of 3") for line in res["coverageLines"])
    agg = live.data(
        PLAN_Q,
        {
            "p": {
                "collectionId": coll,
                "fields": ["jurisdiction"],
                "aggregate": {"op": "COUNT", "groupBy": "jurisdiction"},
            }
        },
        agent,
    )["queryFields"]
    assert [(g["key"], g["documents"]) for g in agg["groups"]] == [("Delaware", 2), ("New York", 1)]
    too_many = live.gql(PLAN_Q, {"p": {"collectionId": coll, "fields": ["party"], "limit": 201}}, agent).json()
    err = too_many["errors"][0]
    assert err["extensions"]["code"] == "FIELD_QUERY_LIMIT_OUT_OF_RANGE" and err["extensions"]["limit"] == 200
    # a new version re-extracts on write (Services.on_new_version from bootstrap): no extractFields call
    live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){status}}",
        {
            "i": {
                "collectionId": coll,
                "externalId": "gamma.txt",
                "title": "gamma.txt",
                "text": NDAS["gamma.txt"].replace("State of Delaware", "State of New York"),
            }
        },
        owner,
    )
    again = live.data(
        PLAN_Q,
        {
            "p": {
                "collectionId": coll,
                "fields": ["jurisdiction"],
                "aggregate": {"op": "COUNT", "groupBy": "jurisdiction"},
            }
        },
        agent,
    )["queryFields"]
    assert {g["key"]: g["documents"] for g in again["groups"]} == {"Delaware": 1, "New York": 2}
