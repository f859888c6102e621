"""Context sets (issue 13): curation mutations, versioning, library reads and their limits,
through GraphQL on both backends."""

from __future__ import annotations

import secrets

import pytest

pytestmark = pytest.mark.both_backends  # curation writes, versions and library reads

SET_FIELDS = """id name description active version createdBy updatedBy scope{collectionIds documentIds}
verifiedAnswers{id position question answer citation{documentId passageId} trust createdBy}
definitions{id term definition aliases trust} instructions{id position text trust}
requiredEvidence{id documentId passageId}"""

CREATE = f"mutation($i:CreateContextSetInput!){{createContextSet(input:$i){{{SET_FIELDS}}}}}"
UPDATE = f"mutation($id:ID!,$i:UpdateContextSetInput!){{updateContextSet(id:$id,input:$i){{{SET_FIELDS}}}}}"


def make_set(live, name: str | None = None, **extra) -> dict:
    """Create a set over the handbook collection (editor token); returns the GraphQL object."""
    i = {
        "name": name or f"set-{secrets.token_hex(4)}",
        "description": "Billing and retrieval handbook",
        "scope": {"collectionIds": [live.ids["coll:handbook"]]},
        "definitions": [
            {"term": "API", "definition": "Application programming interface.", "aliases": ["interface"]},
            {"term": "RRF", "definition": "Reciprocal rank fusion, k = 60.", "aliases": ["rank fusion"]},
            {"term": "ベクトル検索", "definition": "意味の近さで探す検索。"},
        ],
        "verifiedAnswers": [
            {
                "question": "When are invoices generated?",
                "answer": "Nightly at two o'clock, then emailed to the billing contact.",
                "citation": {"documentId": live.ids["doc:dedup-a"]},
            },
            {"question": "Where is the billing service hosted?", "answer": "In the Frankfurt region."},
            {"question": "ベクトル検索を開発したのは誰ですか？", "answer": "東京のチームです。"},
        ],
        "instructions": ["Cite the document you used.", "Answer in the language of the question."],
        "requiredEvidence": [{"documentId": live.ids["doc:packs"]}],
        **extra,
    }
    return live.data(CREATE, {"i": i}, live.tokens["editor"])["createContextSet"]


def err(body: dict) -> dict:
    assert body.get("errors"), body
    return body["errors"][0]


def test_editor_creates_a_set_with_approved_entries(live):
    s = make_set(live)
    assert s["version"] == 1 and s["active"] is True
    assert s["createdBy"] == live.ids["member:editor"]
    assert [d["term"] for d in s["definitions"]] == ["API", "RRF", "ベクトル検索"]
    assert {d["trust"] for d in s["definitions"] + s["verifiedAnswers"] + s["instructions"]} == {"APPROVED"}
    assert [i["position"] for i in s["instructions"]] == [0, 1]
    assert s["verifiedAnswers"][0]["citation"]["documentId"] == live.ids["doc:dedup-a"]


def test_viewers_and_agents_cannot_curate(live):
    i = {"name": f"v-{secrets.token_hex(3)}"}
    assert err(live.gql(CREATE, {"i": i}, live.tokens["viewer"]).json())["extensions"]["code"] == "FORBIDDEN"
    code = err(live.gql(CREATE, {"i": i}, live.tokens["agent"]).json())["extensions"]["code"]
    assert code == "AGENT_OPERATION_NOT_ALLOWED"


def test_every_change_is_versioned_with_who_and_what(live):
    s = make_set(live)
    u = live.data(UPDATE, {"id": s["id"], "i": {"instructions": ["Only cite the handbook."]}}, live.tokens["admin"])
    u = u["updateContextSet"]
    assert u["version"] == 2 and u["updatedBy"] == live.ids["member:admin"]
    assert [i["text"] for i in u["instructions"]] == ["Only cite the handbook."]
    # unchanged sections keep their entry ids
    assert [d["id"] for d in u["definitions"]] == [d["id"] for d in s["definitions"]]
    # a no-op change records nothing
    same = live.data(UPDATE, {"id": s["id"], "i": {"description": s["description"]}}, live.tokens["editor"])
    assert same["updateContextSet"]["version"] == 2
    v = live.data(
        "query($id:ID!){contextSetVersions(contextSetId:$id){number actorId change snapshot}}",
        {"id": s["id"]},
        live.tokens["viewer"],
    )["contextSetVersions"]
    assert [(x["number"], x["actorId"], x["change"]) for x in v] == [
        (2, live.ids["member:admin"], "instructions"),
        (1, live.ids["member:editor"], "created"),
    ]
    assert v[1]["snapshot"]["instructions"][0]["text"] == "Cite the document you used."


def test_write_checks_name_each_field_and_limit(live):
    name = f"dup-{secrets.token_hex(3)}"
    make_set(live, name)
    body = live.gql(CREATE, {"i": {"name": name}}, live.tokens["editor"]).json()
    assert err(body)["extensions"]["code"] == "CONTEXT_SET_NAME_TAKEN"
    cases = [
        ({"name": "x", "instructions": ["i"] * 21}, "input.instructions", 20),
        ({"name": "x", "definitions": [{"term": "a" * 201, "definition": "d"}]}, "input.definitions[0].term", "1-200"),
        (
            {"name": "x", "definitions": [{"term": "API", "definition": "d"}, {"term": "ＡＰＩ", "definition": "e"}]},
            "input.definitions[1].term",
            None,
        ),
        ({"name": "x", "scope": {"collectionIds": ["c"] * 9}}, "input.scope.collectionIds", 8),
    ]
    for i, field, limit in cases:
        e = err(live.gql(CREATE, {"i": i}, live.tokens["editor"]).json())
        assert e["extensions"]["code"] == "BAD_USER_INPUT", e
        assert e["extensions"]["field"] == field, e
        if limit is not None:
            assert e["extensions"]["limit"] == limit, e
    # references must exist and required evidence must lie inside the scope
    e = err(
        live.gql(
            CREATE, {"i": {"name": "x", "requiredEvidence": [{"documentId": "doc_nope"}]}}, live.tokens["editor"]
        ).json()
    )
    assert e["extensions"]["code"] == "NOT_FOUND" and e["extensions"]["field"] == "input.requiredEvidence[0].documentId"
    e = err(
        live.gql(
            CREATE,
            {
                "i": {
                    "name": "x",
                    "scope": {"collectionIds": [live.ids["coll:handbook"]]},
                    "requiredEvidence": [{"documentId": live.ids["doc:volcano"]}],
                }
            },
            live.tokens["editor"],
        ).json()
    )
    assert e["extensions"]["code"] == "BAD_USER_INPUT" and "outside the set's scope" in e["message"]


LOOKUP = "query($t:String!,$s:ID,$l:Int){lookupDefinitions(term:$t,contextSetId:$s,limit:$l){contextSetId score matchedWords definition{term}}}"
MATCH = "query($q:String!,$s:ID,$l:Int){matchVerifiedAnswers(question:$q,contextSetId:$s,limit:$l){score coverage matchedWords verifiedAnswer{question answer}}}"


def test_definitions_lookup_folds_case_width_and_aliases(live):
    s = make_set(live)
    tok = live.tokens["agentReadOnly"]
    for term, expected in (("ＡＰＩ", "API"), ("api", "API"), ("Rank Fusion", "RRF"), ("ベクトル検索", "ベクトル検索")):
        hits = live.data(LOOKUP, {"t": term, "s": s["id"], "l": 3}, tok)["lookupDefinitions"]
        assert hits and hits[0]["definition"]["term"] == expected, (term, hits)
        assert hits[0]["score"] == 1.0


def test_verified_answers_ranked_with_score_and_words(live):
    s = make_set(live)
    tok = live.tokens["agentReadOnly"]
    hits = live.data(MATCH, {"q": "what time do invoices get generated", "s": s["id"]}, tok)["matchVerifiedAnswers"]
    assert hits[0]["verifiedAnswer"]["question"] == "When are invoices generated?"
    assert set(hits[0]["matchedWords"]) >= {"invoices", "generated"}
    assert hits[0]["score"] > (hits[1]["score"] if len(hits) > 1 else 0)
    ja = live.data(MATCH, {"q": "ベクトル検索は誰が開発しましたか", "s": s["id"], "l": 1}, tok)["matchVerifiedAnswers"]
    assert ja[0]["verifiedAnswer"]["answer"] == "東京のチームです。"


def test_library_reads_refuse_out_of_limit_input(live):
    s = make_set(live)
    tok = live.tokens["agentReadOnly"]
    cases = [
        (LOOKUP, {"t": "API", "l": 51}, "limit", "1-50"),
        (LOOKUP, {"t": "API", "l": 0}, "limit", "1-50"),
        (LOOKUP, {"t": "x" * 201}, "term", "1-200"),
        (LOOKUP, {"t": "   "}, "term", "1-200"),
        (MATCH, {"q": "q" * 1001, "s": s["id"]}, "question", "1-1000"),
        ("query{contextSets(limit:99){id}}", {}, "limit", "1-50"),
        ("query($q:String){contextSets(query:$q){id}}", {"q": "x" * 501}, "query", "0-500"),
    ]
    for q, v, field, limit in cases:
        e = err(live.gql(q, v, tok).json())
        assert e["extensions"]["code"] == "BAD_USER_INPUT", (q, e)
        assert e["extensions"]["field"] == field and e["extensions"]["limit"] == limit, e


def test_context_sets_list_by_word_match(live):
    s = make_set(live, f"Volcano answers {secrets.token_hex(3)}", description="Sicily geology")
    got = live.data(
        'query{contextSets(query:"volcanoes of Sicily", limit:5){id name}}', None, live.tokens["agentReadOnly"]
    )["contextSets"]
    assert got[0]["id"] == s["id"]
    one = live.data("query($id:ID){contextSet(contextSetId:$id){id version}}", {"id": s["id"]}, live.tokens["viewer"])
    assert one["contextSet"]["id"] == s["id"]
