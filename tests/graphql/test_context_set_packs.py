"""Set-first packing and credential binding (issue 13 items 3 and 4), through GraphQL
(query, subscription) and the NDJSON route, on both backends. The bound credential's refusals
on every operation and channel: tests/graphql/test_context_set_binding.py."""

from __future__ import annotations

import json
import secrets

import pytest

from tests import local_http
from tests.graphql.pack_calls import PACK_FIELDS, _stream
from tests.graphql.test_context_sets import UPDATE, make_set

pytestmark = pytest.mark.both_backends  # set entries, versions and activation are stored and read back

FIELDS = PACK_FIELDS.replace(
    "validity { validFrom validTo } superseded contradiction contradicts }",
    "validity { validFrom validTo } superseded contradiction contradicts "
    "contextSetEntry { contextSetId entryId setVersion citedDocumentId citedPassageId } }",
).replace("dedupPackMs }", "dedupPackMs firstSetItemMs firstEvidenceItemMs }")
PACK = f"query($i: ContextPackInput!) {{ contextPack(input: $i) {{ {FIELDS} }} }}"
ORDER = ["VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION", "REQUIRED_EVIDENCE", "EVIDENCE", "WHOLE_DOCUMENT"]
TASK = "When are invoices generated, and how does RRF rank them?"


def pack(live, inp: dict, token: str | None = None) -> dict:
    return live.data(PACK, {"i": inp}, token or live.tokens["agent"])["contextPack"]


def bound_token(live, set_id: str, scopes=("context:read", "queries:run")) -> str:
    r = live.data(
        "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token credential{contextSetId}}}",
        {
            "i": {
                "name": f"bound-{secrets.token_hex(3)}",
                "scopes": list(scopes),
                "expiresInDays": 5,
                "contextSetId": set_id,
            }
        },
        live.tokens["owner"],
    )["createAgentCredential"]
    assert r["credential"]["contextSetId"] == set_id
    return r["token"]


def test_pack_with_a_set_puts_approved_items_first_then_evidence_within_budget(live):
    s = make_set(live)
    p = pack(live, {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 1200}})
    kinds = [i["kind"] for i in p["items"]]
    assert kinds[:5] == ["VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION", "INSTRUCTION", "REQUIRED_EVIDENCE"], kinds
    assert sorted(kinds, key=ORDER.index) == kinds  # the set-first order, then evidence
    assert "EVIDENCE" in kinds
    first = p["items"][0]
    assert first["trust"] == "APPROVED" and first["citation"] is None and "Nightly at two" in first["text"]
    assert first["contextSetEntry"]["citedDocumentId"] == live.ids["doc:dedup-a"]
    assert {i["trust"] for i in p["items"][:4]} == {"APPROVED"}
    assert {i["trust"] for i in p["items"][4:]} == {"UNTRUSTED"}
    req = p["items"][4]
    assert req["citation"]["documentId"] == live.ids["doc:packs"] and req["citation"]["passageId"] is None
    # only definitions the task uses: RRF, not API or ベクトル検索
    assert [i["documentTitle"] for i in p["items"] if i["kind"] == "DEFINITION"] == ["RRF"]
    # the required document is not repeated as evidence; evidence stays inside the set's scope
    ev = [i for i in p["items"] if i["kind"] == "EVIDENCE"]
    assert all(i["citation"]["documentId"] != live.ids["doc:packs"] for i in ev)
    assert all(i["collectionId"] == live.ids["coll:handbook"] for i in ev)
    assert [i["rank"] for i in p["items"]] == list(range(1, len(p["items"]) + 1))
    assert p["tokensUsed"] == sum(i["tokens"] for i in p["items"]) <= 1200
    t = p["timings"]
    assert t["firstSetItemMs"] is not None and t["firstEvidenceItemMs"] is not None
    assert t["firstSetItemMs"] < t["firstEvidenceItemMs"]


def test_pack_without_a_set_has_no_approved_items(live):
    make_set(live)
    p = pack(live, {"task": TASK, "budget": {"maxTokens": 1200}})
    assert {i["trust"] for i in p["items"]} == {"UNTRUSTED"}
    assert {i["kind"] for i in p["items"]} == {"EVIDENCE"}
    assert p["timings"]["firstSetItemMs"] is None


def test_a_set_with_500_definitions_adds_only_the_terms_the_task_uses(live):
    defs = [{"term": f"term{n:03d}", "definition": f"Definition number {n}."} for n in range(500)]
    defs.append({"term": "billing contact", "definition": "Who receives invoices."})
    s = make_set(live, definitions=defs, verifiedAnswers=[], instructions=[], requiredEvidence=[])
    p = pack(live, {"task": "Who is the billing contact for term042?", "contextSetId": s["id"], "retrieval": "LEXICAL"})
    got = [i["documentTitle"] for i in p["items"] if i["kind"] == "DEFINITION"]
    assert got == ["billing contact", "term042"]


async def test_streamed_pack_with_a_set_equals_the_pack(live):
    s = make_set(live)
    inp = {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 1200}}
    events = await _stream(live, {"i": inp}, live.tokens["agent"])
    streamed = [{k: v for k, v in e.items() if k != "__typename"} for e in events[1:-1]]
    p = live.data(PACK.replace(FIELDS, PACK_FIELDS), {"i": inp}, live.tokens["agent"])["contextPack"]
    assert [e["kind"] for e in streamed][:1] == ["VERIFIED_ANSWER"]
    assert json.dumps(streamed, sort_keys=True) == json.dumps(p["items"], sort_keys=True)
    with local_http.stream(
        "POST",
        f"{live.url}/v1/context-packs/stream",
        json=inp,
        headers={"Authorization": f"Bearer {live.tokens['agent']}"},
        timeout=60,
    ) as r:
        lines = [json.loads(line) for line in r.iter_lines() if line]
    items = lines[1:-1]
    assert [(i["kind"], i["text"], i["trust"]) for i in items] == [
        (i["kind"], i["text"], i["trust"]) for i in p["items"]
    ]
    assert items[0]["citation"] is None and items[0]["contextSetEntry"]["contextSetId"] == s["id"]


def test_require_complete_fails_when_required_evidence_does_not_fit(live):
    long_text = " ".join(f"Clause {n}: the billing contact receives invoice copy {n}." for n in range(60))
    doc = live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {
            "i": {
                "collectionId": live.ids["coll:handbook"],
                "externalId": f"long-{secrets.token_hex(3)}",
                "text": long_text,
            }
        },
        live.tokens["owner"],
    )["upsertDocument"]["documentId"]
    s = make_set(live, requiredEvidence=[{"documentId": doc}])
    inp = {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 256, "coverage": "REQUIRE_COMPLETE"}}
    body = live.gql(PACK, {"i": inp}, live.tokens["agent"]).json()
    e = body["errors"][0]
    assert e["extensions"]["code"] == "CONTEXT_PACK_INCOMPLETE" and e["extensions"]["reasons"] == ["REQUIRED_EVIDENCE"]
    assert doc in e["message"] and "do not fit" in e["message"]
    inp["budget"]["coverage"] = "BEST_EFFORT"
    p = pack(live, inp)
    assert p["complete"] is False and "REQUIRED_EVIDENCE" in p["incompleteReasons"]
    assert any("required evidence missing" in n for n in p["notes"])
    assert p["tokensUsed"] <= 256


# ---- binding: the refusal table of operations × channels is tests/graphql/test_context_set_binding.py


def test_deactivating_a_set_refuses_its_bound_credentials(live):
    s = make_set(live)
    tok = bound_token(live, s["id"])
    assert live.data("query{viewer{id}}", None, tok)
    live.data(UPDATE, {"id": s["id"], "i": {"active": False}}, live.tokens["editor"])
    for q in ("query{viewer{id}}", "query{collections{id}}", 'query{contextPack(input:{task:"invoices"}){packId}}'):
        body = live.gql(q, None, tok).json()
        assert body["errors"][0]["extensions"]["code"] == "AGENT_CONTEXT_SET_INACTIVE", (q, body)
    r = local_http.post(
        f"{live.url}/v1/context-packs/stream",
        json={"task": "invoices"},
        headers={"Authorization": f"Bearer {tok}"},
        timeout=60,
    )
    assert r.status_code == 403 and r.json()["errors"][0]["extensions"]["code"] == "AGENT_CONTEXT_SET_INACTIVE"
    # an unbound caller naming the inactive set is refused too, and no credential can be bound to it
    body = live.gql(PACK, {"i": {"task": "invoices", "contextSetId": s["id"]}}, live.tokens["agent"]).json()
    assert body["errors"][0]["extensions"]["code"] == "AGENT_CONTEXT_SET_INACTIVE"
    body = live.gql(
        "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token}}",
        {"i": {"name": "late", "expiresInDays": 5, "contextSetId": s["id"]}},
        live.tokens["owner"],
    ).json()
    assert body["errors"][0]["extensions"]["field"] == "input.contextSetId"
    live.data(UPDATE, {"id": s["id"], "i": {"active": True}}, live.tokens["editor"])
    assert live.data("query{viewer{id}}", None, tok)


def test_a_near_miss_task_gets_no_verified_answer_a_paraphrase_does(live):
    """Issue 32 item 12: the frame ("How do I … my …?", 「…はどうやって…ますか」) does not make
    another question's approved answer the head of the pack; the subject words do."""
    answers = [
        {"question": "How do I reset my VPN password?", "answer": "Use the VPN portal's reset page."},
        {"question": "会議室の予約はどうやって取り消しますか？", "answer": "予約システムの取消ボタンから。"},
    ]
    s = make_set(live, verifiedAnswers=answers, definitions=[], instructions=[], requiredEvidence=[])
    for task in ("How do I reset my router?", "会議室の照明はどうやって消しますか？"):
        p = pack(live, {"task": task, "contextSetId": s["id"], "retrieval": "LEXICAL"})
        assert [i["kind"] for i in p["items"] if i["trust"] == "APPROVED"] == [], (task, p["items"][:1])
    for task, text in (
        ("How can I reset the VPN password?", "Use the VPN portal's reset page."),
        ("会議室の予約を取り消す方法を教えてください", "予約システムの取消ボタンから。"),
    ):
        p = pack(live, {"task": task, "contextSetId": s["id"], "retrieval": "LEXICAL"})
        head = p["items"][0]
        assert (head["kind"], head["trust"]) == ("VERIFIED_ANSWER", "APPROVED"), task
        assert head["text"].endswith(text) and head["contextSetEntry"]["contextSetId"] == s["id"]
        assert [i["kind"] for i in p["items"]].count("VERIFIED_ANSWER") == 1
    # the read lists the frame-only match with its low coverage and only the subject word it shares
    hits = live.data(
        "query($q:String!,$s:ID){matchVerifiedAnswers(question:$q,contextSetId:$s){coverage matchedWords}}",
        {"q": "How do I reset my router?", "s": s["id"]},
        live.tokens["agentReadOnly"],
    )["matchVerifiedAnswers"]
    assert hits == [{"coverage": 0.333333, "matchedWords": ["reset"]}]


def _last_passage_of(live, doc: str) -> str:
    d = live.data(
        "query($id:ID!){document(id:$id){versions{passages{passageId ordinal}}}}", {"id": doc}, live.tokens["agent"]
    )["document"]
    return max(d["versions"][-1]["passages"], key=lambda p: p["ordinal"])["passageId"]


def test_required_evidence_names_its_source_as_evidence_does(live):
    """Issue 32 item 13: a required item's citation and item carry the document's external id,
    title and collection, like any evidence item."""
    passage = _last_passage_of(live, live.ids["doc:dedup-b"])
    required = [{"documentId": live.ids["doc:packs"]}, {"documentId": live.ids["doc:dedup-b"], "passageId": passage}]
    s = make_set(live, requiredEvidence=required)
    p = pack(live, {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 1200}})
    handbook = live.ids["coll:handbook"]
    got = [
        (
            i["externalId"],
            i["collectionName"],
            i["citation"]["passageId"],
            i["citation"]["externalId"],
            i["citation"]["documentTitle"],
            i["citation"]["collectionId"],
            i["citation"]["collectionName"],
        )
        for i in p["items"]
        if i["kind"] == "REQUIRED_EVIDENCE"
    ]
    assert got == [
        ("packs", "handbook", None, "packs", "Context packs", handbook, "handbook"),
        ("dedup-b", "handbook", passage, "dedup-b", "Release notes B", handbook, "handbook"),
    ]
    assert {(i["externalId"], i["collectionName"]) for i in p["items"] if i["trust"] == "APPROVED"} == {("", "")}


def _exactly(tokens: int) -> str:
    """An instruction of exactly ``tokens`` cl100k tokens."""
    from cairn.retrieval.tokens import count_tokens

    text = " ".join(["Always"] + ["cite"] * tokens)
    while count_tokens(text) > tokens:
        text = text.rsplit(" ", 1)[0]
    assert count_tokens(text) == tokens
    return text


def test_a_set_entry_that_does_not_fit_is_named_with_its_own_reason(live):
    """Issue 32 item 13: a matched definition that does not fit is SET_ITEM_OVER_BUDGET and
    named; the set's first entry not fitting is the pack's top item (TOP_ITEM_OVER_BUDGET);
    evidence crowded out by the set's items is EVIDENCE_OVER_BUDGET, not the top item."""
    long_def = " ".join(f"Reciprocal rank fusion detail {n} about ranking lists." for n in range(25))
    s = make_set(live, definitions=[{"term": "RRF", "definition": long_def}])
    inp = {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 256}}
    p = pack(live, inp)
    assert "DEFINITION" not in [i["kind"] for i in p["items"]] and "EVIDENCE" in [i["kind"] for i in p["items"]]
    assert (p["complete"], p["incompleteReasons"], p["truncated"]) == (False, ["SET_ITEM_OVER_BUDGET"], True)
    assert p["notes"][0].startswith(
        f'context set {s["name"]} (v1): 4 set items first, 1 did not fit: DEFINITION "RRF" ('
    )
    inp["budget"]["coverage"] = "REQUIRE_COMPLETE"
    e = live.gql(PACK, {"i": inp}, live.tokens["agent"]).json()["errors"][0]
    assert (e["extensions"]["code"], e["extensions"]["reasons"]) == (
        "CONTEXT_PACK_INCOMPLETE",
        ["SET_ITEM_OVER_BUDGET"],
    )
    assert 'DEFINITION "RRF"' in e["message"]
    # the set's first entry is the pack's top item
    answer = " ".join(f"Invoice run step {n} happens nightly." for n in range(60))
    s = make_set(
        live,
        verifiedAnswers=[{"question": "When are invoices generated?", "answer": answer}],
        definitions=[],
        instructions=[],
        requiredEvidence=[],
    )
    p = pack(live, {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 256}})
    assert p["incompleteReasons"] == ["TOP_ITEM_OVER_BUDGET"] and p["items"][0]["kind"] == "EVIDENCE"
    assert 'did not fit: VERIFIED_ANSWER "When are invoices generated?" (' in p["notes"][0]
    # every set item fits, and leaves 3 tokens: the evidence is crowded out, not over the budget
    s = make_set(live, verifiedAnswers=[], definitions=[], instructions=[_exactly(253)], requiredEvidence=[])
    p = pack(live, {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 256}})
    assert [i["kind"] for i in p["items"]] == ["INSTRUCTION"] and p["tokensUsed"] == 253
    assert p["incompleteReasons"] == ["EVIDENCE_OVER_BUDGET"]
    assert any(n.endswith("did not fit the 3 tokens the context set's items left") for n in p["notes"]), p["notes"]
