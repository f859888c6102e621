"""The context-pack calls the GraphQL tests share: the pack query and its fields, the
subscription, a minimal governed call, and helpers to run a pack, read a GraphQL error and
collect a graphql-transport-ws stream (used by test_packs_*, test_governance_* and others)."""

from __future__ import annotations

import json

import httpx

from tests.graphql import ws_calls

PACK_FIELDS = """
  packId replayId maxTokens tokensUsed truncated complete incompleteReasons latencyMs tokenizer retrieval
  asOf { validTime systemTime } candidates duplicatesMerged notes
  timings { embedMs lexicalMs vectorMs fusionMs resolveMs dedupPackMs }
  items { rank kind text tokens trust score ranks { lexical dense } externalId documentTitle collectionId collectionName
          citation { documentId versionId passageId start end sha256
                     externalId documentTitle collectionId collectionName }
          alternateCitations { documentId versionId passageId start end sha256
                               externalId documentTitle collectionId collectionName }
          validity { validFrom validTo } superseded contradiction contradicts }
"""
PACK_QUERY = f"query($i: ContextPackInput!) {{ contextPack(input: $i) {{ {PACK_FIELDS} }} }}"
ITEM_FIELDS = PACK_FIELDS.split("items {", 1)[1].rsplit("}", 1)[0]
STREAM_QUERY = f"""subscription($i: ContextPackInput!) {{ contextPackStream(input: $i) {{
  __typename
  ... on PackHeader {{ packId replayId maxTokens tokenizer traceId coordinate capability }}
  ... on PackItem {{ {ITEM_FIELDS} }}
  ... on PackFooter {{ tokensUsed itemCount truncated complete latencyMs }}
}} }}"""

PACK = (
    "query($i:ContextPackInput!){contextPack(input:$i){packId}}",
    {"i": {"task": "volcano", "retrieval": "LEXICAL"}},
)
"""A minimal governed call: contextPack on the lexical leg (the governance tests' probe)."""


def pack(live, task: str, token: str | None = None, **extra) -> dict:
    return live.data(PACK_QUERY, {"i": {"task": task, **extra}}, token or live.tokens["agent"])["contextPack"]


def error_of(resp: httpx.Response) -> dict:
    body = resp.json()
    assert body.get("errors"), body
    return body["errors"][0]


async def _stream(live, variables: dict, token: str) -> list[dict]:
    async with ws_calls.acked(live.ws_url, token) as ws:
        await ws.send(
            json.dumps({"id": "1", "type": "subscribe", "payload": {"query": STREAM_QUERY, "variables": variables}})
        )
        events = []
        while True:
            msg = await ws_calls.recv_json(ws, waiting_for="the pack stream's next message")
            if msg["type"] == "complete":
                return events
            if msg["type"] == "error":
                return [{"__error__": msg["payload"]}]
            assert msg["type"] == "next", msg
            if msg["payload"].get("errors"):
                return [{"__error__": msg["payload"]["errors"]}]
            events.append(msg["payload"]["data"]["contextPackStream"])
