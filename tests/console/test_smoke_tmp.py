def test_smoke(console):
    console.open("owner")
    console.shot("explorer")
    console.page.goto(console.server.url + "/console#/access")
    console.page.get_by_role("heading", name="Agent credentials").wait_for()
    console.shot("access")
    console.page.goto(console.server.url + "/console#/memory")
    console.page.get_by_role("heading", name="My agents' memory").wait_for()
    console.shot("memory")
