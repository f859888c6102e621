"""Context gaps keep their resolution (issue 36), through GraphQL on both backends (the
migration adds the columns): an editor turns a gap into a verified answer or a definition of a
set in one call (a new set version, the entry kept with every other entry), or dismisses it with
a reason; a closed gap answers 409; bad input names the field."""

from __future__ import annotations

import pytest

from tests.graphql.test_context_sets import make_set

pytestmark = pytest.mark.both_backends  # the gap's resolution columns are stored

GAP = "id status resolution resolvedBy resolvedByName resolvedAt resolvedContextSetId resolvedEntryId"
REPORT = f"mutation($i:ContextGapInput!){{reportContextGap(input:$i){{{GAP}}}}}"
RESOLVE = f"mutation($id:ID!,$i:ResolveContextGapInput!){{resolveContextGap(id:$id,input:$i){{{GAP}}}}}"
DISMISS = f"mutation($id:ID!,$r:String!){{dismissContextGap(id:$id,reason:$r){{{GAP}}}}}"
SET = "query($id:ID!){contextSet(contextSetId:$id){version verifiedAnswers{id question answer} definitions{id term aliases}}}"


def _report(live, task: str) -> dict:
    i = {"task": task, "missing": "No approved answer for this."}
    gap = live.data(REPORT, {"i": i}, live.tokens["viewer"])["reportContextGap"]
    assert (gap["status"], gap["resolution"], gap["resolvedBy"]) == ("OPEN", None, None)
    return gap


def _code(r) -> str:
    body = r.json()
    assert body.get("errors"), body
    return body["errors"][0]["extensions"]["code"]


def test_a_gap_becomes_a_verified_answer_then_stays_resolved(live):
    s = make_set(live)
    before = live.data(SET, {"id": s["id"]}, live.tokens["editor"])["contextSet"]
    gap = _report(live, "How long are refunds kept open?")
    va = {"question": "How long are refunds kept open?", "answer": "Thirty days from the invoice date."}
    out = live.data(
        RESOLVE, {"id": gap["id"], "i": {"contextSetId": s["id"], "verifiedAnswer": va}}, live.tokens["editor"]
    )
    done = out["resolveContextGap"]
    after = live.data(SET, {"id": s["id"]}, live.tokens["editor"])["contextSet"]
    assert after["version"] == before["version"] + 1
    assert after["verifiedAnswers"][:-1] == before["verifiedAnswers"]  # every other entry kept, ids too
    new = after["verifiedAnswers"][-1]
    assert (new["question"], new["answer"]) == (va["question"], va["answer"])
    assert done["status"] == "RESOLVED" and done["resolvedEntryId"] == new["id"]
    assert done["resolvedContextSetId"] == s["id"] and done["resolvedBy"] == live.ids["member:editor"]
    assert done["resolvedByName"] and done["resolvedAt"]
    assert new["id"] in done["resolution"] and f"version {after['version']}" in done["resolution"]
    listed = live.data(f"{{contextGaps(first:200){{gaps{{{GAP}}}}}}}", token=live.tokens["editor"])["contextGaps"]
    assert next(g for g in listed["gaps"] if g["id"] == gap["id"]) == done
    # closed once: neither a second resolution nor a dismissal changes it
    r = live.gql(DISMISS, {"id": gap["id"], "r": "duplicate"}, live.tokens["editor"])
    assert _code(r) == "CONTEXT_GAP_RESOLVED"


def test_a_definition_with_aliases_and_a_dismissal_with_its_reason(live):
    s = make_set(live)
    gap = _report(live, "What does SLA mean here?")
    d = {"term": "SLA", "definition": "Service level agreement: 99.9 % monthly.", "aliases": ["service level"]}
    done = live.data(RESOLVE, {"id": gap["id"], "i": {"contextSetId": s["id"], "definition": d}}, live.tokens["admin"])
    after = live.data(SET, {"id": s["id"]}, live.tokens["editor"])["contextSet"]
    assert after["definitions"][-1]["term"] == "SLA" and after["definitions"][-1]["aliases"] == ["service level"]
    assert done["resolveContextGap"]["resolvedEntryId"] == after["definitions"][-1]["id"]

    other = _report(live, "Who won the 1998 World Cup?")
    out = live.data(DISMISS, {"id": other["id"], "r": "Outside this workspace's subject."}, live.tokens["editor"])
    g = out["dismissContextGap"]
    assert (g["status"], g["resolution"], g["resolvedContextSetId"]) == (
        "DISMISSED",
        "Outside this workspace's subject.",
        None,
    )


def test_resolution_input_errors_name_the_field(live):
    s = make_set(live)
    gap = _report(live, "Input errors")
    both = {
        "contextSetId": s["id"],
        "verifiedAnswer": {"question": "q", "answer": "a"},
        "definition": {"term": "t", "definition": "d"},
    }
    r = live.gql(RESOLVE, {"id": gap["id"], "i": both}, live.tokens["editor"])
    assert _code(r) == "BAD_USER_INPUT" and r.json()["errors"][0]["extensions"]["field"] == "input"
    r = live.gql(RESOLVE, {"id": gap["id"], "i": {"contextSetId": s["id"]}}, live.tokens["editor"])
    assert _code(r) == "BAD_USER_INPUT"
    r = live.gql(DISMISS, {"id": gap["id"], "r": "x" * 2001}, live.tokens["editor"])
    assert _code(r) == "CONTEXT_GAP_TEXT_TOO_LONG"
    r = live.gql(
        RESOLVE,
        {"id": gap["id"], "i": {"contextSetId": "cs_missing", "definition": {"term": "t", "definition": "d"}}},
        live.tokens["editor"],
    )
    assert _code(r) == "NOT_FOUND"
    # nothing above closed it
    r = live.data(DISMISS, {"id": gap["id"], "r": "test"}, live.tokens["editor"])
    assert r["dismissContextGap"]["status"] == "DISMISSED"
