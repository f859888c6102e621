"""``cairn mcp`` over stdio with a credential bound to a context set (issue 32 item 3): the
ontology tools are refused with ``AGENT_CONTEXT_SET_SCOPE_REFUSED`` and leak no row, while an
unbound credential of the same creator reads them; a passage outside the set is refused too."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from sqlalchemy import select

from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.models import Member, Passage
from cairn.app.governance import capabilities_for_scopes
from cairn.app.identity import service as identity
from tests import factories
from tests.db.test_cli import cairn
from tests.db.test_mcp_stdio import _server

pytestmark = pytest.mark.slow  # starts `cairn mcp` processes

MAPPING = """id: tiny
name: Tiny colours
description: Two colours.
source: {kind: csv}
object_types:
  - id: colour
    name: Colour
    description: A colour with a name.
    sql: SELECT ColourID, Name FROM colours
    primary_key: [ColourID]
    properties:
      - {name: ColourID, type: integer}
      - {name: Name, type: string, full_text: true}
"""
SETS = "sets:\n  - name: rocks only\n    scope: {collections: [rocks]}\n"


async def _bound_credential(url: str, set_id: str) -> tuple[str, str]:
    """A credential bound to ``set_id`` (the API's createAgentCredential, which the CLI lacks)
    and the id of a passage of the ``secret`` collection."""
    db = Database(url)
    try:
        async with db.session() as s:
            m = (await s.execute(select(Member).where(Member.role == "owner"))).scalars().one()
            scopes = ["context:read"]
            _cred, issued = await identity.create_credential(
                s,
                creator=factories.member_principal(m),
                name="bound",
                scopes=scopes,
                expires_in_days=5,
                context_set_id=set_id,
                default_capabilities=capabilities_for_scopes(set(scopes)),
            )
            secret = (await s.execute(select(Passage.id).where(Passage.text.contains("merger")))).scalars().first()
        return issued.token, secret
    finally:
        await db.dispose()


def test_stdio_ontology_tools_refuse_bound_credentials(tmp_path):
    data, rocks, secret = tmp_path / "data", tmp_path / "rocks", tmp_path / "secret"
    rocks.mkdir()
    secret.mkdir()
    (rocks / "basalt.txt").write_text("Basalt is a fine-grained volcanic rock that forms from fast-cooling lava.")
    (secret / "plan.txt").write_text("The merger with Globex closes in May.")
    for folder, coll in ((rocks, "rocks"), (secret, "secret")):
        assert cairn("ingest", str(folder), "--collection", coll, "--lexical-only", data_dir=data).returncode == 0
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "colours.csv").write_text("ColourID,Name\n1,Vermilion\n2,Cerulean\n")
    (tmp_path / "tiny.yaml").write_text(MAPPING)
    env = {"CAIRN_EMBEDDER": "none"}
    loaded = cairn("ontology", "load", str(tmp_path / "tiny.yaml"), "-s", str(tmp_path / "csv"), data_dir=data, env=env)
    assert loaded.returncode == 0, loaded.stderr
    owner = json.loads(cairn("members", "add", "olga", "--role", "owner", data_dir=data).stdout)
    (tmp_path / "sets.yaml").write_text(SETS)
    imported = cairn("sets", "import", str(tmp_path / "sets.yaml"), data_dir=data)
    assert imported.returncode == 0, imported.stderr
    set_id = json.loads(imported.stdout.splitlines()[0])["contextSetId"]
    unbound = json.loads(
        cairn("credentials", "create", "--creator", owner["memberId"], "--scope", "context:read", data_dir=data).stdout
    )["token"]
    bound, secret_passage = asyncio.run(_bound_credential(Settings(data_dir=data).resolved_database_url, set_id))

    calls = [
        ("object_instances", {"knId": "tiny", "otId": "colour"}),
        ("semantic_recall", {"knId": "tiny", "query": "vermilion"}),
        ("get_passage", {"passageId": secret_passage}),
    ]

    async def go(token: str):
        async with stdio_client(_server(data, token)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return [await s.call_tool(name, args) for name, args in calls]

    for (name, _), r in zip(calls, asyncio.run(go(bound)), strict=True):
        assert r.isError, (name, r.structuredContent)
        assert r.structuredContent["error"]["code"] == "AGENT_CONTEXT_SET_SCOPE_REFUSED", (name, r.structuredContent)
        text = json.dumps(r.structuredContent)
        assert "Vermilion" not in text and "merger" not in text, name
    rows, _recall, passage = asyncio.run(go(unbound))  # the same calls, unbound: the data is there
    assert "Vermilion" in json.dumps(rows.structuredContent) and "merger" in json.dumps(passage.structuredContent)
