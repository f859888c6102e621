"""Replay of set-first packs through GraphQL, on both backends (issue 32 items 8, 9, 10):
VERIFY compares every context-set item by content (approved entries by their text's hash,
required evidence by its cited text), marks deleted entries and a deactivated set
UNAVAILABLE, and honours a bound credential's current scope; RECOMPUTE's diff shows exactly
the set entries that changed."""

from __future__ import annotations

import pytest

from tests.graphql.test_context_set_packs import TASK, bound_token, pack
from tests.graphql.test_context_sets import UPDATE, make_set

pytestmark = pytest.mark.both_backends  # replay records and set versions are stored and read back

REPLAY = """query($id: ID!, $m: ReplayMode!, $t: String) { replay(replayId: $id, mode: $m, task: $t) {
  items { rank kind status currentVersionId citation { documentId versionId passageId sha256 } }
  pack { items { rank kind text } }
  diff { added { rank kind } removed { rank kind } moved { kind oldRank newRank } unchanged } } }"""


def verify(live, replay_id: str, token: str | None = None) -> list[dict]:
    return live.data(REPLAY, {"id": replay_id, "m": "VERIFY"}, token or live.tokens["agent"])["replay"]["items"]


def recompute(live, replay_id: str, task: str, token: str | None = None) -> dict:
    return live.data(REPLAY, {"id": replay_id, "m": "RECOMPUTE", "t": task}, token or live.tokens["agent"])["replay"]


def _last_passage_of(live, doc: str) -> str:
    d = live.data(
        "query($id:ID!){document(id:$id){versions{passages{passageId ordinal}}}}", {"id": doc}, live.tokens["agent"]
    )["document"]
    return max(d["versions"][-1]["passages"], key=lambda p: p["ordinal"])["passageId"]


def _set_with_two_required(live) -> dict:
    """make_set's set, requiring a whole document and one passage of another."""
    required = [
        {"documentId": live.ids["doc:packs"]},
        {"documentId": live.ids["doc:dedup-b"], "passageId": _last_passage_of(live, live.ids["doc:dedup-b"])},
    ]
    return make_set(live, requiredEvidence=required)


def test_verify_right_after_a_set_first_pack_finds_every_item_unchanged_and_recompute_agrees(live):
    s = _set_with_two_required(live)
    p = pack(live, {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 1200}})
    kinds = [i["kind"] for i in p["items"]]
    assert kinds.count("REQUIRED_EVIDENCE") == 2 and {"VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION"} <= set(kinds)
    checks = verify(live, p["replayId"])
    assert [(c["rank"], c["status"]) for c in checks] == [(i["rank"], "UNCHANGED") for i in p["items"]], checks
    required = [c for c in checks if c["kind"] == "REQUIRED_EVIDENCE"]
    # the whole document and the passage: their document's current version, as for evidence
    assert [(c["citation"]["passageId"] is None, c["currentVersionId"]) for c in required] == [
        (True, live.ids["ver:packs"]),
        (False, live.ids["ver:dedup-b"]),
    ]
    # approved entries name the entry compared, at the set's current version
    for c in checks:
        if c["kind"] in ("VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION"):
            assert c["currentVersionId"] == f"{c['citation']['versionId'].split('@')[0]}@{s['version']}"
    r = recompute(live, p["replayId"], TASK)
    assert r["diff"] == {"added": [], "removed": [], "moved": [], "unchanged": len(p["items"])}
    assert [(i["kind"], i["text"]) for i in r["pack"]["items"]] == [(i["kind"], i["text"]) for i in p["items"]]


def test_each_set_entry_is_compared_by_content_not_by_the_set_version(live):
    s = _set_with_two_required(live)
    editor = live.tokens["editor"]
    p = pack(live, {"task": TASK, "contextSetId": s["id"], "budget": {"maxTokens": 1200}})
    by_kind: dict[str, list[int]] = {}
    for i in p["items"]:
        by_kind.setdefault(i["kind"], []).append(i["rank"])
    assert len(by_kind["INSTRUCTION"]) == 2 and len(by_kind["DEFINITION"]) == 1

    def statuses() -> dict[int, str]:
        return {c["rank"]: c["status"] for c in verify(live, p["replayId"])}

    def expect(changed=(), unavailable=()) -> None:
        want = {
            i["rank"]: "CHANGED" if i["rank"] in changed else "UNAVAILABLE" if i["rank"] in unavailable else "UNCHANGED"
            for i in p["items"]
        }
        assert statuses() == want

    # only the description: nothing any item says changed
    live.data(UPDATE, {"id": s["id"], "i": {"description": "Edited description only"}}, editor)
    expect()
    # one definition's text: that definition only, now naming the entry that replaced it
    defs = [
        {"term": "API", "definition": "Application programming interface.", "aliases": ["interface"]},
        {"term": "RRF", "definition": "Reciprocal rank fusion, k = 61.", "aliases": ["rank fusion"]},
        {"term": "ベクトル検索", "definition": "意味の近さで探す検索。"},
    ]
    v = live.data(UPDATE, {"id": s["id"], "i": {"definitions": defs}}, editor)["updateContextSet"]
    (rrf,) = [d for d in v["definitions"] if d["term"] == "RRF"]
    expect(changed=by_kind["DEFINITION"])
    (d,) = [c for c in verify(live, p["replayId"]) if c["kind"] == "DEFINITION"]
    assert d["currentVersionId"] == f"{rrf['id']}@{v['version']}"
    # RECOMPUTE shows exactly that entry replaced, at its rank
    r = recompute(live, p["replayId"], TASK)
    assert r["diff"]["removed"] == [{"rank": by_kind["DEFINITION"][0], "kind": "DEFINITION"}]
    assert r["diff"]["added"] == [{"rank": by_kind["DEFINITION"][0], "kind": "DEFINITION"}]
    assert r["diff"]["moved"] == [] and r["diff"]["unchanged"] == len(p["items"]) - 1
    # back to the recorded text: unchanged again (content, not history)
    defs[1]["definition"] = "Reciprocal rank fusion, k = 60."
    live.data(UPDATE, {"id": s["id"], "i": {"definitions": defs}}, editor)
    expect()
    # the first instruction edited: it alone changed; then deleted: it alone unavailable
    first = by_kind["INSTRUCTION"][0]
    live.data(
        UPDATE,
        {
            "id": s["id"],
            "i": {"instructions": ["Cite every document you used.", "Answer in the language of the question."]},
        },
        editor,
    )
    expect(changed=[first])
    live.data(UPDATE, {"id": s["id"], "i": {"instructions": ["Answer in the language of the question."]}}, editor)
    expect(unavailable=[first])
    # the verified answer deleted, then the required passage dropped from the set
    answers = [{"question": "Where is the billing service hosted?", "answer": "In the Frankfurt region."}]
    live.data(UPDATE, {"id": s["id"], "i": {"verifiedAnswers": answers}}, editor)
    expect(unavailable=[first, *by_kind["VERIFIED_ANSWER"]])
    passage = by_kind["REQUIRED_EVIDENCE"][1]
    live.data(UPDATE, {"id": s["id"], "i": {"requiredEvidence": [{"documentId": live.ids["doc:packs"]}]}}, editor)
    expect(unavailable=[first, *by_kind["VERIFIED_ANSWER"], passage])
    # the set deactivated: every set item unavailable, evidence untouched
    live.data(UPDATE, {"id": s["id"], "i": {"active": False}}, editor)
    set_ranks = [r for k in ("VERIFIED_ANSWER", "DEFINITION", "INSTRUCTION", "REQUIRED_EVIDENCE") for r in by_kind[k]]
    expect(unavailable=set_ranks)
    assert {c["currentVersionId"] for c in verify(live, p["replayId"]) if c["rank"] in set_ranks} == {None}


def test_verify_by_a_bound_credential_hides_what_its_narrowed_set_no_longer_covers(live):
    s = make_set(live)
    tok = bound_token(live, s["id"], scopes=("context:read", "replay:run"))
    p = pack(live, {"task": TASK, "budget": {"maxTokens": 1200}}, tok)
    outside = [i["rank"] for i in p["items"] if i["citation"] and i["citation"]["documentId"] != live.ids["doc:packs"]]
    assert outside, p["items"]  # evidence from the handbook's other documents
    before = {c["rank"]: c["status"] for c in verify(live, p["replayId"], tok)}
    assert {before[r] for r in outside} == {"UNCHANGED"}
    # the set narrowed to the one document it requires
    live.data(
        UPDATE,
        {"id": s["id"], "i": {"scope": {"collectionIds": [], "documentIds": [live.ids["doc:packs"]]}}},
        live.tokens["editor"],
    )
    checks = {c["rank"]: c for c in verify(live, p["replayId"], tok)}
    for rank in outside:
        assert (checks[rank]["status"], checks[rank]["currentVersionId"]) == ("UNAVAILABLE", None), checks[rank]
    # what the set still covers reads as before: its approved entries and the required document
    inside = [r for r in checks if r not in outside]
    assert {checks[r]["status"] for r in inside} == {"UNCHANGED"}, checks
    (req,) = [c for c in checks.values() if c["kind"] == "REQUIRED_EVIDENCE"]
    assert req["currentVersionId"] == live.ids["ver:packs"]
