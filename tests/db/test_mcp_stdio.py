"""``cairn mcp`` over stdio, driven by the official SDK's own client (a subprocess on a temp data
dir, lexical only): list tools, build a pack, remember + recall, refusals with GraphQL's codes,
a credential revoked while the process runs stops working at the next call, and a bad
credential stops the command at start-up."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from app.core.config import Settings
from app.core.db import Database
from app.identity import service as identity
from app.mcp import ENVELOPE_META, TOOLS
from app.memory import set_settings
from tests.db.test_cli import ROOT, cairn


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
        command=sys.executable, args=["-m", "app.cli", "mcp", "--data-dir", str(data_dir)], env=env, cwd=str(ROOT)
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
    assert tools == list(TOOLS)
    assert not pack.isError, pack.structuredContent
    top = pack.structuredContent["items"][0]
    assert "Basalt" in top["text"] and len(top["citation"]["sha256"]) == 64
    assert pack.meta[ENVELOPE_META]["target"] == "cairn.mcp"
    mem_id = remembered.structuredContent["memory"]["id"]
    assert recalled.structuredContent["memories"][0]["memory"]["id"] == mem_id

    _tools, (refused, limit) = asyncio.run(
        go(
            ro["token"],
            [("remember", {"namespace": "geo", "text": "x y"}), ("recall", {"query": "rock", "limit": 51})],
        )
    )
    assert refused.isError and refused.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"
    assert limit.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"  # scope is checked before limits
    _tools, (limit,) = asyncio.run(go(full["token"], [("recall", {"query": "rock", "limit": 51})]))
    err = limit.structuredContent["error"]
    assert (err["code"], err["field"], err["limit"]) == ("BAD_USER_INPUT", "input.limit", "1-50")

    async def revoked_mid_session():
        async with stdio_client(_server(data, ro["token"])) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            before = await s.call_tool(
                "get_citation", {"documentId": "doc_x", "start": 0, "end": 1, "sha256": "a" * 64}
            )
            revoked = await asyncio.to_thread(cairn, "credentials", "revoke", ro["credentialId"], data_dir=data)
            assert revoked.returncode == 0, revoked.stderr
            after = await s.call_tool("context_pack", {"task": "lava", "retrieval": "LEXICAL"})
            return before, after

    before, after = asyncio.run(revoked_mid_session())
    assert before.structuredContent["error"]["code"] == "NOT_FOUND"  # authenticated, nothing there
    assert after.structuredContent["error"]["code"] == "AGENT_CREDENTIAL_REVOKED"  # checked on every call

    r = cairn("mcp", data_dir=data, env={"CAIRN_TOKEN": "ck_0000000000000000_nope", "CAIRN_EMBEDDER": "none"})
    assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stdout == ""
