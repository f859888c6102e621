"""``cairn mcp`` over stdio, driven by the official SDK's own client (a subprocess on a temp data
dir, lexical only): list tools, build a pack, remember + recall, refusals with GraphQL's codes,
a credential revoked while the process runs stops working at the next call, and a bad
credential stops the command at start-up."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError
from sqlalchemy import select

from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.models import ContextGap
from cairn.app.governance import REGISTRY
from cairn.app.identity import service as identity
from cairn.app.mcp import ENVELOPE_META, TOOLS
from cairn.app.memory import set_settings
from tests.db.test_cli import ROOT, cairn

pytestmark = pytest.mark.slow  # each test starts `cairn mcp` processes


async def _memory_on(url: str) -> None:
    db = Database(url)
    try:
        async with db.session() as s:
            ws = await identity.get_workspace_by_name(s, "default")
            await set_settings(s, workspace_id=ws.id, enabled=True, retention_days=None)
    finally:
        await db.dispose()


def _server(data_dir, token: str) -> StdioServerParameters:
    env = {**os.environ, "CAIRN_TOKEN": token, "CAIRN_EMBEDDER": "none"}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "cairn.app.cli", "mcp", "--data-dir", str(data_dir)], env=env, cwd=str(ROOT)
    )


def test_stdio_tools_packs_memory_and_refusals(tmp_path):
    data, docs = tmp_path / "data", tmp_path / "docs"
    docs.mkdir()
    (docs / "granite.txt").write_text("Granite is a coarse-grained igneous rock made of quartz and feldspar.")
    (docs / "basalt.txt").write_text("Basalt is a fine-grained volcanic rock that forms from fast-cooling lava.")
    assert cairn("ingest", str(docs), "--collection", "rocks", "--lexical-only", data_dir=data).returncode == 0
    owner = json.loads(cairn("members", "add", "olga", "--role", "owner", data_dir=data).stdout)
    scopes = ["--scope", "context:read", "--scope", "memory:read", "--scope", "memory:write"]
    full = json.loads(cairn("credentials", "create", "--creator", owner["memberId"], *scopes, data_dir=data).stdout)
    ro = json.loads(
        cairn("credentials", "create", "--creator", owner["memberId"], "--scope", "context:read", data_dir=data).stdout
    )
    asyncio.run(_memory_on(Settings(data_dir=data).resolved_database_url))

    async def go(token: str, calls: list[tuple[str, dict]]):
        async with stdio_client(_server(data, token)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = [t.name for t in (await s.list_tools()).tools]
            return tools, [await s.call_tool(name, args) for name, args in calls]

    tools, (pack, remembered, recalled) = asyncio.run(
        go(
            full["token"],
            [
                ("context_pack", {"task": "Which rock forms from lava?", "retrieval": "LEXICAL"}),
                ("remember", {"namespace": "geo", "text": "The user collects basalt samples."}),
                ("recall", {"query": "basalt samples"}),
            ],
        )
    )
    # tools/list over stdio: what the credential may call (its scopes), in the table's order
    reads = [n for n, t in TOOLS.items() if REGISTRY[t.op_name].scope == "context:read"]
    assert tools == [n for n in TOOLS if n in {*reads, "remember", "recall", "forget"}] and len(tools) == 19
    assert not pack.isError, pack.structuredContent
    top = pack.structuredContent["items"][0]
    assert "Basalt" in top["text"] and len(top["citation"]["sha256"]) == 64
    assert pack.meta[ENVELOPE_META]["target"] == "cairn.mcp"
    mem_id = remembered.structuredContent["memory"]["id"]
    assert recalled.structuredContent["memories"][0]["memory"]["id"] == mem_id

    ro_tools, (refused, limit) = asyncio.run(
        go(
            ro["token"],
            [("remember", {"namespace": "geo", "text": "x y"}), ("recall", {"query": "rock", "limit": 51})],
        )
    )
    assert ro_tools == reads  # a context:read credential lists no write tool (nor recall)
    assert refused.isError and refused.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"
    assert limit.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"  # scope is checked before limits
    _tools, (limit,) = asyncio.run(go(full["token"], [("recall", {"query": "rock", "limit": 51})]))
    err = limit.structuredContent["error"]
    assert (err["code"], err["field"], err["limit"]) == ("BAD_USER_INPUT", "limit", "1-50")

    async def revoked_mid_session():
        async with stdio_client(_server(data, ro["token"])) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            before = await s.call_tool(
                "get_citation", {"documentId": "doc_x", "start": 0, "end": 1, "sha256": "a" * 64}
            )
            revoked = await asyncio.to_thread(cairn, "credentials", "revoke", ro["credentialId"], data_dir=data)
            assert revoked.returncode == 0, revoked.stderr
            after = await s.call_tool("context_pack", {"task": "lava", "retrieval": "LEXICAL"})
            with pytest.raises(McpError) as listed:
                await s.list_tools()
            return before, after, listed.value.error

    before, after, listed = asyncio.run(revoked_mid_session())
    assert (listed.code, listed.data["code"]) == (-32001, "AGENT_CREDENTIAL_REVOKED")  # tools/list too
    assert before.structuredContent["error"]["code"] == "NOT_FOUND"  # authenticated, nothing there
    assert after.structuredContent["error"]["code"] == "AGENT_CREDENTIAL_REVOKED"  # checked on every call

    r = cairn("mcp", data_dir=data, env={"CAIRN_TOKEN": "ck_0000000000000000_nope", "CAIRN_EMBEDDER": "none"})
    assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stdout == ""


async def _gaps(url: str) -> list[ContextGap]:
    db = Database(url)
    try:
        async with db.session() as s:
            return list((await s.execute(select(ContextGap))).scalars())
    finally:
        await db.dispose()


def test_stdio_library_fact_and_gap_tools(tmp_path):
    data, docs = tmp_path / "data", tmp_path / "docs"
    docs.mkdir()
    rows = [
        {"_id": "cfo-2019", "title": "Acme Corp", "text": "Jane Doe was appointed CFO of Acme Corp in 2019."},
        {"_id": "cfo-2024", "title": "Acme Corp", "text": "On 1 July 2024, Acme Corp named John Roe as its new CFO."},
    ]
    (docs / "acme.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert cairn("ingest", str(docs), "--collection", "acme", "--lexical-only", data_dir=data).returncode == 0
    owner = json.loads(cairn("members", "add", "olga", "--role", "owner", data_dir=data).stdout)
    gaps = json.loads(
        cairn(
            "credentials", "create", "--creator", owner["memberId"], "--scope", "context:read", "--scope",
            "gaps:report", data_dir=data,
        ).stdout
    )  # fmt: skip
    ro = json.loads(
        cairn("credentials", "create", "--creator", owner["memberId"], "--scope", "context:read", data_dir=data).stdout
    )

    async def go(token: str, calls: list[tuple[str, dict]]):
        async with stdio_client(_server(data, token)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = [t.name for t in (await s.list_tools()).tools]
            return tools, [await s.call_tool(name, args) for name, args in calls]

    task = {"task": "Who was Acme's CFO in 2020?", "missing": "The 2020 annual report."}
    tools, (line, gap, sets, empty) = asyncio.run(
        go(
            gaps["token"],
            [
                ("timeline", {"subject": "Acme Corp"}),
                ("report_context_gap", task),
                ("search_context_sets", {}),
                ("query_fields", {"collectionId": "col_x", "fields": []}),
            ],
        )
    )
    assert {"timeline", "report_context_gap", "query_fields", "list_collections"} <= set(tools) and len(tools) == 17
    assert not {"run_query_template", "list_query_templates", "remember"} & set(tools)  # not its scopes
    assert [f["holder"] for f in line.structuredContent["facts"]] == ["Jane Doe", "John Roe"]
    assert line.structuredContent["facts"][0]["citation"]["externalId"] == "cfo-2019"
    assert not gap.isError and gap.meta[ENVELOPE_META]["capability"] == "context_gap:report"
    assert sets.structuredContent == {"contextSets": []}
    assert empty.structuredContent["error"]["code"] == "FIELD_QUERY_NO_FIELDS"
    (stored,) = asyncio.run(_gaps(Settings(data_dir=data).resolved_database_url))
    assert (stored.task, stored.missing, stored.credential_id) == (task["task"], task["missing"], gaps["credentialId"])

    _tools, (refused, template) = asyncio.run(
        go(ro["token"], [("report_context_gap", task), ("run_query_template", {"templateId": "qt_x"})])
    )
    assert refused.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"
    assert template.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"
    assert len(asyncio.run(_gaps(Settings(data_dir=data).resolved_database_url))) == 1

    # an unknown JSON-RPC method is -32601 (method not found), bad params -32602 naming the parameter,
    # a known one still answers
    server = _server(data, ro["token"])
    with subprocess.Popen(
        [server.command, *server.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server.env,
        cwd=server.cwd,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout

        def send(message: dict) -> None:
            stdin.write(json.dumps(message) + "\n")
            stdin.flush()

        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert json.loads(stdout.readline())["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/explode"})
        answer = json.loads(stdout.readline())
        assert (answer["id"], answer["error"]["code"]) == (2, -32601)
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {"task": "x"}}})
        answer = json.loads(stdout.readline())
        assert (answer["id"], answer["error"]["code"], answer["error"]["data"]["field"]) == (4, -32602, "params.name")
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        assert len(json.loads(stdout.readline())["result"]["tools"]) == 16  # context:read's
        stdin.close()
        assert proc.wait(timeout=60) == 0


def test_stdio_loads_the_models_before_it_answers_initialize(tmp_path):
    """The first pack after `initialize` finds the embedder loaded: a DENSE-only pack with the
    smallest time budget (1 s) is complete, with dense items. Before, `cairn mcp` loaded the
    model on the first call (seconds on two cores), so that pack came back `complete: false`
    (LATENCY) with no items."""
    data, docs = tmp_path / "data", tmp_path / "docs"
    docs.mkdir()
    (docs / "granite.txt").write_text("Granite is a coarse-grained igneous rock made of quartz and feldspar.")
    (docs / "basalt.txt").write_text("Basalt is a fine-grained volcanic rock that forms from fast-cooling lava.")
    assert cairn("ingest", str(docs), "--collection", "rocks", data_dir=data).returncode == 0  # with embeddings
    owner = json.loads(cairn("members", "add", "olga", "--role", "owner", data_dir=data).stdout)
    cred = json.loads(
        cairn("credentials", "create", "--creator", owner["memberId"], "--scope", "context:read", data_dir=data).stdout
    )
    env = {k: v for k, v in os.environ.items() if k != "CAIRN_EMBEDDER"}
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cairn.app.cli", "mcp", "--data-dir", str(data)],
        env={**env, "CAIRN_TOKEN": cred["token"]},
        cwd=str(ROOT),
    )

    async def first_pack():
        async with stdio_client(server) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return await s.call_tool(
                "context_pack",
                {"task": "Which rock forms from lava?", "retrieval": "DENSE", "budget": {"maxLatencyMs": 1000}},
            )

    pack = asyncio.run(first_pack()).structuredContent
    assert (pack["complete"], pack["incompleteReasons"]) == (True, []), pack
    assert pack["items"] and all(i["ranks"]["dense"] is not None for i in pack["items"])
    assert "Basalt" in pack["items"][0]["text"]
