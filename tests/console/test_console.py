"""The web console (issue 17) in Debian's Chromium: sign-in, Agent access, memory, the pack
explorer, role checks in the UI and on the server, offline loading. Every test fails on a
browser console error or a request to a host other than the server (conftest)."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

from tests.console.conftest import ASTRAL_DOC
from tests.graphql import ws_calls

VIEWER = "{viewer{kind name}}"
CREATE = "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token credential{id}}}"


def _code(r) -> str:
    return r.json()["errors"][0]["extensions"]["code"]


def test_pages_load_offline_with_no_console_errors(console):
    page = console.page
    page.goto(f"{console.server.url}/console")
    page.get_by_role("heading", name="Sign in to the Cairn console").wait_for()
    console.shot("signin")
    # an agent credential is refused at sign-in; the server would refuse it from a browser too
    page.get_by_label("Member token").fill("ck_0123456789abcdef_" + "a" * 43)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Cairn refuses agent credentials from browsers").wait_for()
    # keyboard only: the token field has focus; Enter signs in
    page.get_by_label("Member token").fill("")
    page.keyboard.type(console.server.tokens["owner"])
    page.keyboard.press("Enter")
    page.locator("#workspace").filter(has_text="acme").wait_for()
    for hash_, heading in (
        ("#/explorer", "Pack explorer"),
        ("#/memory", "My agents' memory"),
        ("#/access", "Agent credentials"),
    ):
        page.goto(f"{console.server.url}/console{hash_}")
        page.get_by_role("heading", name=heading).wait_for()
        page.wait_for_load_state("networkidle")
    # the page's own policy: scripts and calls only to its own origin
    r = page.request.get(f"{console.server.url}/console")
    assert "connect-src 'self'" in r.headers["content-security-policy"]
    assert page.request.get(f"{console.server.url}/console/vendor/graphql-ws/LICENSE.md").ok


def test_create_a_credential_use_it_from_httpx_then_revoke_it(console):
    srv, page = console.server, console.page
    console.open("admin", "#/access")
    page.get_by_role("button", name="New agent credential").click()
    page.get_by_label("Name").fill("console-bot")
    page.get_by_label("Expires in (days)").fill("7")
    # defaults are ticked, and each scope says its creator's minimum role
    assert page.locator("#scope-context-read").is_checked()
    assert not page.locator("#scope-memory-write").is_checked()
    page.get_by_text("Its creator must be editor or higher").first.wait_for()
    # the optional binding lists the workspace's context sets; left at None the credential is unbound
    bound = page.get_by_label("Bound context set")
    assert bound.input_value() == "" and "None" in bound.locator("option").first.inner_text()
    page.get_by_role("button", name="Create credential").click()
    secret = page.get_by_label("Secret", exact=True).input_value()
    assert secret.startswith("ck_")
    page.get_by_role("button", name="Copy secret").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    console.shot("access-created")

    assert srv.data(VIEWER, token=secret)["viewer"] == {"kind": "agent", "name": "console-bot"}
    # the browser refusal stays: the same secret with a browser's Origin header is refused
    r = srv.gql(VIEWER, token=secret, headers={"Origin": srv.url})
    assert r.status_code == 403 and _code(r) == "AGENT_BROWSER_REQUEST_REFUSED"

    page.get_by_role("button", name="Done").click()
    page.reload()
    row = page.locator("tr", has_text="console-bot")
    row.get_by_text("active").wait_for()
    assert "never" not in row.locator("td").nth(4).inner_text()  # last used: the httpx call above
    assert "admin-a" in row.inner_text()  # created by
    row.get_by_role("button", name="Revoke console-bot").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    row.get_by_text("revoked").wait_for()
    r = srv.gql(VIEWER, token=secret)
    assert r.status_code == 401 and _code(r) == "AGENT_CREDENTIAL_REVOKED"


def test_profile_memory_switch_pii_placeholders_and_forgetting(console):
    srv, page = console.server, console.page
    owner = srv.tokens["owner"]
    agent = srv.data(
        CREATE,
        {"i": {"name": "note-taker", "expiresInDays": 5, "scopes": ["context:read", "memory:read", "memory:write"]}},
        owner,
    )["createAgentCredential"]
    console.open("owner", "#/access")
    # responsibility profile: one capability moved to hard boundaries
    page.get_by_role("button", name="Responsibility profile of note-taker").click()
    page.get_by_label("Never: memory:forget").check()
    console.shot("access-profile")
    page.get_by_role("button", name="Save profile").click()
    page.get_by_role("dialog").wait_for(state="detached")
    cred = next(
        c
        for c in srv.data("{agentCredentials{name profile{hardBoundaries}}}", token=owner)["agentCredentials"]
        if c["name"] == "note-taker"
    )
    assert cred["profile"]["hardBoundaries"] == ["memory:forget"]
    # the memory switch
    page.get_by_label("Let agents keep memories").check()
    page.get_by_role("button", name="Save memory settings").click()
    page.get_by_text("Memory is on").wait_for()
    assert srv.data("{memorySettings{enabled}}", token=owner)["memorySettings"]["enabled"] is True

    remember = "mutation($i:RememberMemoryInput!){rememberMemory(input:$i){memory{id}}}"
    for text in ("Write to Dana at dana@example.com about lunch", "Dana (dana@example.com) prefers 野菜 lunches"):
        srv.data(remember, {"i": {"namespace": "prefs", "key": "dana", "text": text}}, agent["token"])
    # memories citing a passage: one whose document then changes, one whose document is deleted
    # (a memory citing a deleted document is purged with it; unreadable ones are counted as hidden)
    for ext, text in (("ramen", "Ramen shops in Osaka open late."), ("soba", "Soba in Nagano is made by hand.")):
        doc = _upsert(srv, ext, text)
        pid = srv.data("query($id:ID!){document(id:$id){versions{passages{passageId}}}}", {"id": doc}, owner)[
            "document"
        ]["versions"][0]["passages"][0]["passageId"]
        srv.data(remember, {"i": {"namespace": "sources", "text": f"{ext} list", "citations": [pid]}}, agent["token"])
    _upsert(srv, "ramen", "Ramen shops in Osaka close at midnight.")
    srv.data("mutation($id:ID!){deleteDocument(id:$id){__typename}}", {"id": srv.ids["doc:soba"]}, owner)

    page.get_by_role("link", name="My agents' memory").click()
    page.locator("li.memory", has_text="ramen list").get_by_text("source CHANGED").wait_for()
    assert page.locator("li.memory", has_text="soba list").count() == 0  # purged with its document
    item = page.locator("li.memory", has_text="prefers")
    item.locator("mark.pii", has_text="[EMAIL_1]").wait_for()
    assert "dana@example.com" not in page.content()
    item.get_by_role("button", name="Versions").click()
    versions = item.get_by_role("list", name="Versions of dana").locator("> li")
    versions.nth(1).wait_for()
    assert versions.count() == 2
    console.shot("memory-versions")
    # search is the same recall
    page.get_by_label("Namespace", exact=True).fill("prefs")
    page.get_by_label("Search (the same recall your agents use)").fill("lunch 野菜")
    page.get_by_role("button", name="Search").click()
    page.get_by_text("candidates ranked").wait_for()
    assert page.locator("li.memory").count() == 1
    # one namespace only
    page.get_by_label("Search (the same recall your agents use)").fill("")
    page.get_by_label("Namespace", exact=True).fill("sources")
    page.get_by_role("button", name="Search").click()
    page.get_by_text("1 memory", exact=True).wait_for()
    page.locator("li.memory", has_text="ramen list").wait_for()
    page.get_by_label("Namespace", exact=True).fill("prefs")
    # forget the old version, then the key
    page.get_by_label("Search (the same recall your agents use)").fill("")
    page.get_by_role("button", name="Search").click()
    page.get_by_text("1 memory", exact=True).wait_for()
    item = page.locator("li.memory", has_text="prefers")
    item.get_by_role("button", name="Versions").click()
    item.get_by_role("button", name="Forget version 1 of dana").click()
    page.get_by_role("dialog").get_by_role("button", name="Forget version").click()
    page.get_by_text("Forgot version 1 of dana").wait_for()
    page.locator("li.memory", has_text="prefers").get_by_role("button", name="Forget key dana (every version)").click()
    page.get_by_role("dialog").get_by_role("button", name="Forget").click()
    page.get_by_text("Forgot 1 version.").wait_for()
    assert page.locator("li.memory").count() == 0
    listed = srv.data('query{listMemories(input:{namespace:"prefs", allVersions:true}){memories{id}}}', token=owner)
    assert listed["listMemories"]["memories"] == []
    # delete every memory: the button works only once the workspace name is typed
    page.get_by_role("link", name="Settings → Agent access").click()
    page.get_by_role("button", name="Delete all memories…").click()
    dialog = page.get_by_role("dialog")
    confirm = dialog.get_by_role("button", name="Delete all memories")
    assert confirm.is_disabled()
    dialog.get_by_label("Type acme to confirm").fill("acm")
    assert confirm.is_disabled()
    dialog.get_by_label("Type acme to confirm").fill("acme")
    confirm.click()
    page.get_by_text("Deleted 1 memory version.").wait_for()
    assert srv.data("query{listMemories{memories{id}}}", token=owner)["listMemories"]["memories"] == []


def _upsert(srv, ext: str, text: str) -> str:
    r = srv.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {"i": {"collectionId": srv.ids["coll"], "externalId": ext, "title": ext, "text": text}},
        srv.tokens["owner"],
    )
    srv.ids[f"doc:{ext}"] = r["upsertDocument"]["documentId"]
    return srv.ids[f"doc:{ext}"]


def _ws_run(url: str, token: str, document: str) -> list[dict]:
    """Run a subscription document over graphql-transport-ws in a thread of its own (the sync
    Playwright API holds this thread's event loop) and return its ``next`` payloads; what the
    thread raised (a wrong message, no answer within the deadline) is raised here."""
    out: list[dict] = []

    async def go() -> None:
        async with ws_calls.acked(url, token) as ws:
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": document}}))
            while True:
                msg = await ws_calls.recv_json(ws, 30, waiting_for="the subscription's next message")
                assert msg["type"] in ("next", "complete"), msg
                if msg["type"] == "complete":
                    return
                out.append(msg["payload"])

    pool = ThreadPoolExecutor(1)
    try:
        pool.submit(asyncio.run, go()).result(timeout=120)
    finally:
        pool.shutdown(wait=False)
    return out


def test_explorer_streams_items_before_the_footer_and_highlights_the_exact_span(console):
    srv, page = console.server, console.page
    task = "gyudon beef bowls in Tokyo"
    console.open("viewer", "#/explorer")
    page.get_by_label("Task").fill(task)
    page.get_by_label("Retrieval mode").select_option("LEXICAL")
    page.get_by_role("button", name="Stream pack").click()
    page.locator(".pack-footer[data-received-at]").wait_for()
    first = float(page.locator("ol.items > li").first.get_attribute("data-received-at"))
    footer = page.locator(".pack-footer")
    assert first < float(footer.get_attribute("data-received-at"))
    assert int(footer.get_attribute("data-items-shown")) >= 1  # on the page before the footer came

    expected = srv.data(
        "query($i:ContextPackInput!){contextPack(input:$i){items{rank text citation{documentId}}}}",
        {"i": {"task": task, "retrieval": "LEXICAL", "budget": {"maxTokens": 1200}}},
        srv.tokens["viewer"],
    )["contextPack"]["items"]
    top = expected[0]
    assert top["citation"]["documentId"] == srv.ids["doc:gyudon"] and "𠮷野家" in top["text"]
    page.locator("ol.items > li").first.get_by_role("button").click()
    mark = page.locator("mark.cited")
    mark.wait_for()
    assert mark.inner_text() == top["text"]  # code-point offsets: astral characters precede it
    assert page.locator(".doc-text").inner_text() == ASTRAL_DOC
    page.get_by_text("sha256 matches").wait_for()
    console.shot("explorer-highlight")

    page.get_by_role("button", name="Copy as GraphQL").click()
    document = page.get_by_label("The request as GraphQL").inner_text()
    assert (
        'contextPackStream(input: {task: "gyudon beef bowls in Tokyo"' in document and "retrieval: LEXICAL" in document
    )
    assert page.evaluate("navigator.clipboard.readText()") == document
    events = _ws_run(srv.url.replace("http", "ws") + "/graphql", srv.tokens["viewer"], document)
    items = [
        e["data"]["contextPackStream"] for e in events if e["data"]["contextPackStream"]["__typename"] == "PackItem"
    ]
    assert [i["text"] for i in items] == [i["text"] for i in expected]


def test_a_viewer_gets_no_admin_actions_and_the_server_refuses_them(console):
    srv, page = console.server, console.page
    console.open("viewer", "#/memory")
    assert page.get_by_role("link", name="Settings → Agent access").is_hidden()
    page.goto(f"{srv.url}/console#/access")
    page.get_by_text("Agent access is managed by owners and admins; your role is viewer").wait_for()
    for name in ("New agent credential", "Revoke", "Save memory settings", "Delete all memories…"):
        assert page.get_by_role("button", name=name).count() == 0
    console.shot("viewer-access")
    viewer = srv.tokens["viewer"]
    r = srv.gql(CREATE, {"i": {"name": "nope", "expiresInDays": 1}}, viewer)
    assert r.status_code == 403 and _code(r) == "FORBIDDEN"
    r = srv.gql("mutation{setMemorySettings(enabled:true){enabled}}", token=viewer)
    assert r.status_code == 403 and _code(r) == "FORBIDDEN"
    # an admin manages credentials but not the owner's memory settings: UI and server agree
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("heading", name="Sign in to the Cairn console").wait_for()
    assert page.evaluate("sessionStorage.length") == 0
    console.open("admin", "#/access")
    page.get_by_text("are the owner's settings").wait_for()
    assert page.get_by_role("button", name="Save memory settings").count() == 0
    r = srv.gql("mutation{deleteAllMemories{deleted}}", token=srv.tokens["admin"])
    assert r.status_code == 403 and _code(r) == "FORBIDDEN"
