"""graphql-transport-ws calls with a deadline on every wait, for the tests that talk to a live
server over a real WebSocket (``websockets``).

``websockets.connect`` bounds the opening and closing handshakes (``open_timeout`` and
``close_timeout``, 10 s each by default) but ``ws.recv()`` waits for ever: a server that never
answers an operation (a lost ``connection_ack``, a subscription that stopped without
``complete``) used to leave a test, and with it the whole run, hanging without a name. Every
read here fails the test instead, saying what it waited for and for how long.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import websockets

SUBPROTOCOL = "graphql-transport-ws"

MESSAGE_SECONDS = 60.0
"""How long a test waits for one message by default: a context pack on 2 busy cores takes a
few seconds; a minute without any message means the server will not answer."""


async def recv_json(ws: Any, seconds: float = MESSAGE_SECONDS, *, waiting_for: str = "a message") -> dict:
    """The next message on ``ws``, parsed.

    Raises:
        AssertionError: No message within ``seconds`` (names ``waiting_for``).
        websockets.exceptions.ConnectionClosed: The server closed the connection.
    """
    try:
        raw = await asyncio.wait_for(ws.recv(), seconds)
    except TimeoutError:
        raise AssertionError(f"no WebSocket message within {seconds:g} s while waiting for {waiting_for}") from None
    return json.loads(raw)


async def init(ws: Any, payload: dict | None = None, seconds: float = MESSAGE_SECONDS) -> dict:
    """Send ``connection_init`` with ``payload`` and return the server's answer (``connection_ack``
    when accepted), within ``seconds``."""
    await ws.send(json.dumps({"type": "connection_init", "payload": payload or {}}))
    return await recv_json(ws, seconds, waiting_for="the answer to connection_init")


@contextlib.asynccontextmanager
async def acked(url: str, token: str | None = None, **connect: Any) -> AsyncIterator[Any]:
    """An open graphql-transport-ws connection to ``url`` whose ``connection_init`` (with the
    bearer ``token``, if any) was acknowledged; ``connect`` goes to ``websockets.connect``
    (``origin``, ``additional_headers``…)."""
    payload = {"Authorization": f"Bearer {token}"} if token else {}
    async with websockets.connect(url, subprotocols=[SUBPROTOCOL], **connect) as ws:
        ack = await init(ws, payload)
        assert ack["type"] == "connection_ack", ack
        yield ws
