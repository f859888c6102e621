"""GraphiQL (``GET /graphql``) in a real browser under its Content-Security-Policy (issue 32 item
4): the page renders, fetches the schema and runs a query with a member token, with no CSP
violation and no console error, and cannot be framed."""

from __future__ import annotations

CSP_WATCH = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


def test_graphiql_works_under_its_policy_and_refuses_framing(console):
    srv, page = console.server, console.page
    page.add_init_script(CSP_WATCH)
    response = page.goto(f"{srv.url}/graphql?q=%7B%20viewer%20%7B%20kind%20%7D%20%7D")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    headers = page.locator(".graphiql-editor-tool .CodeMirror >> visible=true").first
    headers.wait_for()
    # the Headers tab holds the member token, as a user would paste it
    headers.evaluate(
        "(el, token) => el.CodeMirror.setValue(JSON.stringify({Authorization: `Bearer ${token}`}))",
        srv.tokens["viewer"],
    )
    page.locator(".graphiql-execute-button").click()
    page.locator(".graphiql-response").filter(has_text='"kind": "member"').wait_for()
    # the schema loads with the token (docs explorer, autocompletion)
    page.locator("[aria-label='Re-fetch GraphQL schema']").click()
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__cspViolations") == []
    # GraphiQL fetches the schema once on load, before a token is in the Headers tab: that 401 is expected
    console.errors[:] = [e for e in console.errors if "status of 401 (Unauthorized)" not in e]
    assert console.errors == []
    # a page elsewhere (here about:blank, with no policy of its own) cannot frame it
    page.goto("about:blank")
    page.set_content(f'<iframe id="f" src="{srv.url}/graphql"></iframe>')
    page.wait_for_timeout(1500)
    [frame] = page.frames[1:]
    assert frame.url == "chrome-error://chromewebdata/"  # Chromium refused to render it in the frame
    assert page.frame_locator("#f").locator(".graphiql-container").count() == 0
