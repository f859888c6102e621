"""The curator's console (issue 36) in Debian's Chromium: documents (upload, versions, passages,
delete), context sets (edit, history, try it), the gaps inbox closing the loop from an agent's
MCP report to the answer heading its next pack, query templates (an editor proposes, an admin
approves and runs), replays, and every page at 1400 px and 390 px without horizontal scroll.

One server and one browser for the package (conftest); every test fails on a browser console
error or a request to another host. Screenshots go to CAIRN_CONSOLE_SCREENSHOTS when set.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests import local_http

SET = """query($id:ID!){contextSet(contextSetId:$id){version verifiedAnswers{id question answer citation{documentId passageId}}
definitions{id term aliases}}}"""
PACK = "query($i:ContextPackInput!){contextPack(input:$i){replayId items{kind text contextSetEntry{entryId}}}}"
CREATE_SET = "mutation($i:CreateContextSetInput!){createContextSet(input:$i){id}}"
BILLING = (
    "Refund policy: refunds are paid within fourteen days of the request, to the card used for the purchase. "
    "Invoices are generated nightly."
)


def _code(r) -> str:
    body = r.json()
    assert body.get("errors"), body
    return body["errors"][0]["extensions"]["code"]


def _switch(console, role: str, hash_: str) -> None:
    """Sign out (if signed in) and sign in as ``role`` on ``hash_``."""
    page = console.page
    if page.locator("#signout").is_visible():
        page.locator("#signout").click()
    console.open(role, hash_)


def _no_horizontal_scroll(page) -> None:
    sw, cw = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert sw <= cw, f"horizontal page scroll on {page.url}: scrollWidth {sw} > clientWidth {cw}"


def _mcp(srv, token: str, tool: str, args: dict) -> dict:
    """One MCP tools/call with the SDK's client, in a thread of its own (Playwright's sync API
    holds an event loop in this one); returns structuredContent (asserting no error)."""
    from tests.graphql.test_mcp import call

    class _Live:
        url = srv.url

    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(call, _Live, token, tool, args).result(timeout=300)
    assert not result.isError, result.structuredContent
    return result.structuredContent


def _agent(srv, name: str, scopes: list[str], set_id: str | None = None) -> str:
    i = {"name": name, "expiresInDays": 7, "scopes": scopes, **({"contextSetId": set_id} if set_id else {})}
    return srv.data(
        "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token}}",
        {"i": i},
        srv.tokens["owner"],
    )["createAgentCredential"]["token"]


@pytest.fixture(scope="module")
def billing(console_server) -> dict[str, str]:
    """A billing collection with one document (the curator tests' subject)."""
    srv = console_server
    coll = srv.data('mutation{createCollection(name:"billing"){id}}', token=srv.tokens["owner"])["createCollection"][
        "id"
    ]
    doc = srv.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {"i": {"collectionId": coll, "externalId": "refunds.md", "title": "Refund policy", "text": BILLING}},
        srv.tokens["owner"],
    )["upsertDocument"]["documentId"]
    return {"coll": coll, "doc": doc}


def test_a_set_with_a_verified_answer_and_a_definition_heads_the_pack(console, billing):
    srv, page = console.server, console.page
    console.open("editor", "#/sets")
    page.get_by_role("button", name="New context set").click()
    page.get_by_label("Name", exact=True).fill("billing-set")
    page.get_by_label("Description", exact=True).fill("Refunds and invoices")
    page.get_by_role("button", name="Create set").click()
    page.get_by_role("heading", name="billing-set").wait_for()
    set_id = page.url.split("#/sets/")[1]
    page.get_by_label("billing", exact=True).check()  # scope: the billing collection
    page.get_by_role("button", name="Add verified answer").click()
    page.get_by_label("Question", exact=True).fill("How long do refunds take?")
    page.get_by_label("Answer", exact=True).fill("Refunds are paid within fourteen days.")
    # the citation is picked from a passage of the document
    page.get_by_role("button", name="Cite a passage…").click()
    dialog = page.get_by_role("dialog", name="Pick evidence")
    dialog.get_by_label("Collection", exact=True).select_option(label="billing")
    dialog.get_by_role("button", name="Use passage").first.click()
    page.get_by_role("link", name="passage").first.wait_for()
    page.get_by_role("button", name="Add definition").click()
    page.get_by_label("Term", exact=True).fill("refund window")
    page.get_by_label("Aliases", exact=True).fill("refund period, payback window")
    page.get_by_label("Definition", exact=True).fill("The fourteen days within which a refund is paid.")
    page.get_by_role("button", name="Add instruction").click()
    page.get_by_label("Instruction", exact=True).fill("Cite the refund policy.")
    page.get_by_role("button", name="Save (new version)").click()
    page.get_by_text("Saved as version 2.").wait_for()

    saved = srv.data(SET, {"id": set_id}, srv.tokens["editor"])["contextSet"]
    assert saved["version"] == 2
    va = saved["verifiedAnswers"][0]
    assert (va["question"], va["citation"]["documentId"]) == ("How long do refunds take?", billing["doc"])
    assert va["citation"]["passageId"]
    assert saved["definitions"][0]["aliases"] == ["refund period", "payback window"]
    # the history: who, and a readable diff
    latest = page.locator("[data-version='2']")
    latest.get_by_text("by editor-a").wait_for()
    assert "+ verified answer “How long do refunds take?”" in latest.inner_text()
    assert "+ definition “refund window”" in latest.inner_text()

    # try it: the answer and the definition head the pack, each with why
    task = "How long do refunds take within the refund window?"
    page.get_by_label("Task", exact=True).fill(task)
    page.get_by_role("button", name="Build pack").click()
    first = page.locator(".try-item").first
    first.wait_for()
    kinds = page.locator(".try-item").evaluate_all("els => els.map(e => e.dataset.kind)")
    assert kinds[:2] == ["VERIFIED_ANSWER", "DEFINITION"], kinds
    assert "matched: " in first.locator(".why").inner_text() and "coverage" in first.locator(".why").inner_text()
    console.shot("sets-editor-1400")
    # the same through the API: what agents get
    items = srv.data(PACK, {"i": {"task": task, "contextSetId": set_id}}, srv.tokens["editor"])["contextPack"]["items"]
    assert [i["kind"] for i in items[:2]] == ["VERIFIED_ANSWER", "DEFINITION"]
    assert items[0]["contextSetEntry"]["entryId"] == va["id"]

    # the pack explorer links the set item to its entry and evidence to its document page
    page.get_by_role("link", name="Pack explorer").click()
    page.get_by_label("Task", exact=True).fill(task)
    page.get_by_label("Context set", exact=True).select_option(label="billing-set")
    page.get_by_role("button", name="Stream pack").click()
    page.get_by_text("Done:").wait_for()
    page.locator("li[data-kind='EVIDENCE'] .item-links").first.get_by_role("link", name="Document page").click()
    page.get_by_role("heading", name="Refund policy").wait_for()
    page.get_by_role("heading", name="Versions (1)").wait_for()
    page.locator("mark.cited").wait_for()
    page.go_back()
    page.get_by_label("Task", exact=True).fill(task)
    page.get_by_label("Context set", exact=True).select_option(label="billing-set")
    page.get_by_role("button", name="Stream pack").click()
    page.get_by_text("Done:").wait_for()
    page.locator("li[data-kind='VERIFIED_ANSWER']").get_by_role("link", name="Set entry").click()
    page.locator(f"[data-entry='{va['id']}'].highlight").wait_for()


def test_agent_gap_over_mcp_becomes_the_answer_heading_its_next_pack(console, billing):
    srv, page = console.server, console.page
    set_id = srv.data(
        CREATE_SET,
        {"i": {"name": "support", "scope": {"collectionIds": [billing["coll"]]}}},
        srv.tokens["editor"],
    )["createContextSet"]["id"]
    agent = _agent(srv, "support-bot", ["context:read", "gaps:report"], set_id)
    task = "Which card receives the refund money?"
    before = _mcp(srv, agent, "context_pack", {"task": task})
    assert before["items"] and before["items"][0]["kind"] != "VERIFIED_ANSWER"
    _mcp(srv, agent, "report_context_gap", {"task": "Unrelated older question", "missing": "nothing useful"})
    _mcp(srv, agent, "report_context_gap", {"task": task, "missing": "No approved answer", "packId": before["packId"]})

    console.open("editor", "#/gaps")
    newest = page.locator("li.gap").first
    newest.get_by_role("heading", name=task).wait_for()  # newest first
    assert "agent support-bot" in newest.inner_text() and before["packId"] in newest.inner_text()
    console.shot("gaps-open-1400")
    newest.get_by_role("button", name=f"Make a verified answer of: {task}").click()
    form = newest.get_by_role("form", name="New verified answer")
    assert form.get_by_label("Question", exact=True).input_value() == task  # prefilled
    form.get_by_label("Context set", exact=True).select_option(label="support")
    answer = "The refund goes to the card used for the purchase."
    form.get_by_label("Answer", exact=True).fill(answer)
    form.get_by_role("button", name="Add answer and resolve").click()
    done = page.locator("li.gap[data-status='RESOLVED']")
    done.get_by_text("resolved by editor-a").wait_for()
    # the other gap: dismissed with a reason, kept
    other = page.locator("li.gap", has_text="Unrelated older question")
    other.get_by_role("button", name="Dismiss: Unrelated older question").click()
    other.get_by_label("Reason", exact=True).fill("Not a billing question.")
    other.get_by_role("button", name="Dismiss gap").click()
    page.locator("li.gap[data-status='DISMISSED']").get_by_text("Not a billing question.").wait_for()
    gaps = srv.data("{contextGaps(first:5){gaps{task status resolution resolvedByName}}}", token=srv.tokens["editor"])
    by_task = {g["task"]: g for g in gaps["contextGaps"]["gaps"]}
    assert by_task[task]["status"] == "RESOLVED" and by_task[task]["resolvedByName"] == "editor-a"
    assert by_task["Unrelated older question"]["resolution"] == "Not a billing question."

    # the agent's next pack for that task starts with the answer
    after = _mcp(srv, agent, "context_pack", {"task": task})
    assert after["items"][0]["kind"] == "VERIFIED_ANSWER"
    assert answer in after["items"][0]["text"]
    # the resolution links to the entry
    done.get_by_role("link", name="Open the entry").click()
    page.locator(".entry.highlight").wait_for()


def test_a_viewer_sees_no_edit_controls_and_the_server_refuses(console, billing):
    srv, page = console.server, console.page
    set_id = srv.data(CREATE_SET, {"i": {"name": "viewer-check"}}, srv.tokens["editor"])["createContextSet"]["id"]
    console.open("viewer", f"#/documents?collection={billing['coll']}")
    page.get_by_role("link", name="Refund policy").wait_for()
    assert page.get_by_role("form", name="Upload files").count() == 0
    page.get_by_role("link", name="Refund policy").click()
    page.get_by_role("heading", name="Versions (1)").wait_for()
    assert page.get_by_role("button", name="Delete document…").count() == 0
    page.goto(f"{srv.url}/console#/sets")
    page.get_by_role("link", name="viewer-check").wait_for()
    assert page.get_by_role("button", name="New context set").count() == 0
    page.get_by_role("link", name="viewer-check").click()
    page.get_by_role("heading", name="viewer-check").wait_for()
    page.get_by_role("heading", name="Version history").wait_for()
    assert (
        page.locator(
            "main form[aria-label='Edit context set'], main textarea:not(form[aria-label='Try the set'] *)"
        ).count()
        == 0
    )
    assert page.get_by_role("button", name="Save (new version)").count() == 0
    console.shot("viewer-set-1400")
    assert page.get_by_role("link", name="Gaps").count() == 0  # the tab is for editors and above
    page.goto(f"{srv.url}/console#/gaps")
    page.get_by_text("Gaps are reviewed by editors and above").wait_for()
    page.goto(f"{srv.url}/console#/templates")
    page.get_by_text("Query templates are for editors and above").wait_for()
    console.shot("viewer-templates-1400")

    viewer = srv.tokens["viewer"]
    refused = [
        ("mutation($i:CreateContextSetInput!){createContextSet(input:$i){id}}", {"i": {"name": "nope"}}),
        ("mutation($id:ID!){updateContextSet(id:$id,input:{active:false}){id}}", {"id": set_id}),
        ("mutation($id:ID!){deleteDocument(id:$id){documentId}}", {"id": billing["doc"]}),
        (
            'mutation($id:ID!){resolveContextGap(id:$id,input:{contextSetId:"cs_x",definition:{term:"t",definition:"d"}}){id}}',
            {"id": "gap_x"},
        ),
        ('mutation{dismissContextGap(id:"gap_x", reason:"r"){id}}', {}),
        (
            'mutation($s:ID!){createQueryTemplate(contextSetId:$s,input:{name:"v",sql:"SELECT 1"}){id}}',
            {"s": set_id},
        ),
        ('mutation{approveQueryTemplate(templateId:"qt_x"){id}}', {}),
    ]
    for query, variables in refused:
        assert _code(srv.gql(query, variables, viewer)) == "FORBIDDEN", query
    assert srv.data(SET, {"id": set_id}, viewer)["contextSet"]["version"] == 1


def test_a_template_proposed_by_an_editor_is_approved_by_an_admin_and_run(console, billing):
    from tests.business import TINY_SQL

    srv, page = console.server, console.page
    set_id = srv.data(CREATE_SET, {"i": {"name": "sales"}}, srv.tokens["editor"])["createContextSet"]["id"]
    console.open("editor", "#/templates")
    page.get_by_label("Context set", exact=True).select_option(label="sales")
    page.get_by_role("button", name="Propose a template").click()
    page.get_by_label("Name", exact=True).fill("items_from_price")
    page.get_by_label("Description", exact=True).fill("Items at or above a price.")
    sql = f"{TINY_SQL} WHERE price >= :min_price ORDER BY id"
    page.get_by_label("SQL", exact=True).fill(sql)
    page.get_by_label("Parameters (JSON)").fill(
        '[{"name": "min_price", "type": "float", "min": 0, "max": 1000, "default": 1}]'
    )
    page.get_by_role("button", name="Propose", exact=True).click()
    card = page.locator("article[data-template='items_from_price']")
    card.get_by_text("not approved").wait_for()
    assert card.get_by_label("SQL of items_from_price").inner_text() == sql  # members see the SQL
    assert card.get_by_role("button", name="Review and approve items_from_price").count() == 0  # admins only
    # an agent of the set never sees the draft or any SQL
    agent = _agent(srv, "sales-bot", ["context:read", "queries:run"], set_id)
    listed = srv.data("{queryTemplates{name sql}}", token=agent)["queryTemplates"]
    assert listed == []

    _switch(console, "admin", "#/templates")
    page.get_by_label("Context set", exact=True).select_option(label="sales")
    card.get_by_role("button", name="Review and approve items_from_price").click()
    card.get_by_text("Check passed for version 1 (sqlite).").wait_for()
    card.get_by_role("button", name="Approve version 1").click()
    card.get_by_text("approved v1").wait_for()
    card.get_by_role("button", name="Test run items_from_price").click()
    run = card.get_by_role("form", name="Test run of items_from_price")
    assert run.get_by_label("min_price (float)").get_attribute("type") == "number"
    run.get_by_label("min_price (float)").fill("2")
    run.get_by_role("button", name="Run").click()
    run.get_by_text("2 rows").wait_for()
    names = run.locator("tbody tr td[data-label='name']").all_inner_texts()
    assert names == ["cherry", "it's"]
    console.shot("templates-approved-1400")
    listed = srv.data("{queryTemplates{name sql approved}}", token=agent)["queryTemplates"]
    assert listed == [{"name": "items_from_price", "sql": None, "approved": True}]


def test_upload_two_files_and_find_them_in_a_pack(console, billing):
    """Needs POST /v1/documents (the upload helper's route, merged separately): skipped only while
    the route answers 404 on this branch."""
    srv, page = console.server, console.page
    probe = local_http.post(f"{srv.url}/v1/documents", headers={"Authorization": f"Bearer {srv.tokens['editor']}"})
    if probe.status_code == 404:
        pytest.skip("POST /v1/documents answers 404: the upload route is not on this branch yet (passes once merged)")
    console.open("editor", f"#/documents?collection={billing['coll']}")
    page.get_by_label("Files", exact=True).set_input_files(
        [
            {
                "name": "chargebacks.md",
                "mimeType": "text/markdown",
                "buffer": b"# Chargebacks\n\nA chargeback is disputed through the zebracorn desk within sixty days.",
            },
            {
                "name": "vouchers.txt",
                "mimeType": "text/plain",
                "buffer": b"Vouchers expire after the zebracorn festival each spring.",
            },
        ]
    )
    assert page.get_by_label("External id (one file only)").is_disabled()
    page.get_by_role("button", name="Upload").click()
    for name in ("chargebacks.md", "vouchers.txt"):
        page.locator(f"li.upload[data-file='{name}'][data-status='ingested']").wait_for()
    # the collection's list shows them once the uploads ended
    for name in ("chargebacks.md", "vouchers.txt"):
        page.locator("table[aria-label='Documents'] td", has_text=name).wait_for()
    # the same file again is unchanged, not a second version
    page.get_by_label("Files", exact=True).set_input_files(
        [
            {
                "name": "vouchers.txt",
                "mimeType": "text/plain",
                "buffer": b"Vouchers expire after the zebracorn festival each spring.",
            }
        ]
    )
    page.get_by_role("button", name="Upload").click()
    page.locator("li.upload[data-file='vouchers.txt'][data-status='unchanged']").wait_for()
    console.shot("documents-uploaded-1400")
    items = srv.data(
        "query($i:ContextPackInput!){contextPack(input:$i){items{externalId}}}",
        {"i": {"task": "zebracorn", "filters": {"collectionIds": [billing["coll"]]}}},
        srv.tokens["editor"],
    )["contextPack"]["items"]
    assert {"chargebacks.md", "vouchers.txt"} <= {i["externalId"] for i in items}


def test_every_page_at_1400_and_390_px_without_horizontal_scroll(console, billing):
    srv, page = console.server, console.page
    owner = srv.tokens["owner"]
    # an agent credential (the 390 px Revoke check), a gap, and a pack of the owner's to replay
    _agent(srv, "a-credential-with-a-rather-long-name", ["context:read"])
    srv.data(
        'mutation{reportContextGap(input:{task:"Where is the VAT number printed?", missing:"No invoice layout document"}){id}}',
        token=owner,
    )
    replay = srv.data(PACK, {"i": {"task": "refunds card"}}, owner)["contextPack"]["replayId"]
    set_id = srv.data("{contextSets(limit:50){id name}}", token=owner)["contextSets"][0]["id"]
    # (page, hash, a heading, what shows once its data loaded)
    pages = [
        ("explorer", "#/explorer", "Pack explorer", "select option:has-text('billing-set')"),
        ("documents", f"#/documents?collection={billing['coll']}", "Documents", "table[aria-label='Documents']"),
        ("document", f"#/documents/{billing['doc']}", "Refund policy", "details.version"),
        ("sets", "#/sets", "Context sets", "table[aria-label='Context sets']"),
        ("set", f"#/sets/{set_id}", "Version history", "[data-version='1']"),
        ("gaps", "#/gaps", "Gaps inbox", "li.gap"),
        ("templates", "#/templates", "Query templates", "article.template, main .empty"),
        ("replays", f"#/replays/{replay}", "Items", "table[aria-label='Verified items']"),
        ("memory", "#/memory", "My agents' memory", "form[role='search']"),
        ("access", "#/access", "Agent credentials", "tr[data-credential]"),
    ]
    console.open("owner", "#/explorer")
    for width in (1400, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for name, hash_, heading, ready in pages:
            page.goto(f"{srv.url}/console{hash_}")
            page.get_by_role("heading", name=heading, exact=True).first.wait_for()
            page.locator(ready).first.wait_for(state="attached")
            page.wait_for_load_state("networkidle")
            _no_horizontal_scroll(page)
            # every action reachable: no visible button ends beyond the viewport's width
            cut = page.evaluate(
                """w => [...document.querySelectorAll('main button, main a, main select, main input')]
                  .filter(b => b.offsetParent !== null)
                  .filter(b => { const r = b.getBoundingClientRect(); return r.right > w + 1 || r.left < -1; })
                  .map(b => b.textContent || b.getAttribute('aria-label') || b.name)""",
                width,
            )
            assert cut == [], f"{name} at {width} px: controls outside the page: {cut}"
            console.shot(f"{name}-{width}")
    # 390 px: the credentials table shows Revoke inside the screen (it used to scroll out of sight)
    page.goto(f"{srv.url}/console#/access")
    revoke = page.get_by_role("button", name="Revoke a-credential-with-a-rather-long-name")
    box = revoke.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    # RECOMPUTE with the task: the rebuilt pack equals the recorded one
    page.goto(f"{srv.url}/console#/replays/{replay}")
    page.get_by_role("heading", name="Items").wait_for()
    page.get_by_label("Task (for Recompute)").fill("refunds card")
    page.get_by_role("button", name="Recompute").click()
    page.get_by_role("heading", name="Diff: recorded → rebuilt").wait_for()
    assert "0 added" in page.locator(".replay-out").inner_text()
    console.shot("replays-recompute-390")
